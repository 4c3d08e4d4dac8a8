"""Wall-clock time, shifted by the local cloud's virtual clock where one is running."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

CLOCK_OFFSET_ENV = "INTENTBUS_CLOCK_OFFSET_SECONDS"


class SystemClock:
    """``INTENTBUS_CLOCK_OFFSET_SECONDS`` is set only by the local cloud, to skip time in tests."""

    def now(self) -> datetime:
        offset = float(os.environ.get(CLOCK_OFFSET_ENV, "0") or 0)
        return datetime.now(UTC) + timedelta(seconds=offset)
