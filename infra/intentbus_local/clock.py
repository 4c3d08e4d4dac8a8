"""Virtual time for the local cloud: real time plus whatever the tests skipped."""

from __future__ import annotations

import time


class LocalClock:
    """``now()`` runs with the wall clock and jumps forward on ``advance``; it never goes back."""

    def __init__(self) -> None:
        self._offset = 0.0

    def now(self) -> float:
        """Seconds since the epoch, in virtual time."""
        return time.time() + self._offset

    @property
    def offset_seconds(self) -> float:
        return self._offset

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"the clock cannot go back ({seconds} s)")
        self._offset += seconds

    def advance_to(self, moment: float) -> float:
        """Advance to ``moment`` (epoch seconds) if it is in the future; return the seconds skipped."""
        skipped = max(0.0, moment - self.now())
        self.advance(skipped)
        return skipped
