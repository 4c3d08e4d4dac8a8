"""A manual clock: the pipeline's Clock port, moved only when a test says so."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@dataclass
class VirtualClock:
    """A clock a test moves by hand; it never goes back."""

    current: datetime = field(default_factory=lambda: START)

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"the clock cannot go back ({seconds} s)")
        self.current += timedelta(seconds=seconds)
