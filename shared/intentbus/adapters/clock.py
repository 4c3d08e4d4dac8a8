"""Wall-clock time, shifted by the local cloud's virtual clock where one is running."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

CLOCK_OFFSET_ENV = "INTENTBUS_CLOCK_OFFSET_SECONDS"


class SystemClock:
    """``INTENTBUS_CLOCK_OFFSET_SECONDS`` is set only by the local cloud, to skip time in tests."""

    def now(self) -> datetime:
        offset = clock_offset()
        if not offset:
            return datetime.now(UTC)
        return datetime.now(UTC) + timedelta(seconds=offset)


def clock_offset() -> float:
    """``float(os.environ.get(CLOCK_OFFSET_ENV, "0") or 0)``, read as the variable is now.

    In Lambda the variable is absent, and ``os.environ.get`` finds that out by raising and catching a
    ``KeyError`` (~16 k instructions, once a record). CPython's ``os.environ`` keeps the encoded variables
    in a plain dict (``_data``, updated by every assignment and deletion through ``os.environ``), whose
    ``get`` answers an absent name at once; a present value is decoded as ``os.environ`` decodes it."""
    environ: Any = os.environ
    data = getattr(environ, "_data", None)
    if type(data) is not dict or _ENCODED_NAME is None:
        return float(os.environ.get(CLOCK_OFFSET_ENV, "0") or 0)
    raw = data.get(_ENCODED_NAME)
    if raw is None:
        return 0.0
    return float(environ.decodevalue(raw) or 0)


def _encoded_name() -> Any:
    encode = getattr(os.environ, "encodekey", None)
    return encode(CLOCK_OFFSET_ENV) if callable(encode) else None


_ENCODED_NAME = _encoded_name()
