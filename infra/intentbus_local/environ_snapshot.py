"""The process environment saved before an invocation and put back exactly as it was after it.

``dict(os.environ)`` decodes every name and value (a Python call per variable), and putting it back
compared every variable again the same way: about 1 ms per invocation, 2% of the fault harness's CPU.
CPython's ``os.environ`` keeps the encoded variables in a plain dict (``os.environ._data``, what
``putenv``/``unsetenv`` were told), so a snapshot is a copy of that dict and the restore compares two
dicts, decoding and writing through ``os.environ`` only the variables that differ. Where
``os.environ`` is not built that way, the decoded copy is used, as before.
"""

from __future__ import annotations

import os
from typing import Any


class Snapshot:
    """What ``os.environ`` held when taken; ``restore()`` makes it hold exactly that again."""

    def __init__(self) -> None:
        data = _encoded()
        self._encoded = dict(data) if data is not None else None
        self._decoded = dict(os.environ) if data is None else None

    def restore(self) -> None:
        data = _encoded()
        if self._encoded is not None and data is not None:
            if data != self._encoded:
                _put_back_encoded(data, self._encoded)
            return
        saved = self._decoded if self._decoded is not None else _decoded(self._encoded)
        for name in set(os.environ) - set(saved):
            del os.environ[name]
        for name, value in saved.items():
            if os.environ.get(name) != value:
                os.environ[name] = value


def _encoded() -> dict[Any, Any] | None:
    data = getattr(os.environ, "_data", None)
    has_codecs = callable(getattr(os.environ, "decodekey", None)) and callable(
        getattr(os.environ, "decodevalue", None)
    )
    return data if type(data) is dict and has_codecs else None


def _put_back_encoded(data: dict[Any, Any], saved: dict[Any, Any]) -> None:
    environ: Any = os.environ
    for key in [key for key in data if key not in saved]:
        del environ[environ.decodekey(key)]
    for key, value in saved.items():
        if data.get(key) != value:
            environ[environ.decodekey(key)] = environ.decodevalue(value)


def _decoded(encoded: dict[Any, Any] | None) -> dict[str, str]:
    environ: Any = os.environ
    return {environ.decodekey(key): environ.decodevalue(value) for key, value in (encoded or {}).items()}
