"""The pins' source digests kept on disk per source file's bytes, so a start checks its pins without
tokenizing every pinned function anew.

Each local cloud checks about 120 pinned functions over some 30 files of moto, botocore and
jsonpath_ng (intentbus_local.pinning): ``inspect.getsource`` reads a function's file and tokenizes
from its first line to the end of its block, about 40 ms of CPU a start, for the same digests every
time. ``inspect.getsource`` of a plain function is fixed by its file's lines and its code's first line
number (``findsource`` walks back from ``co_firstlineno`` to its ``def``, ``getblock`` reads on from
there), so a digest is kept under the sha256 of the file's bytes, that line number and the Python
version (whose tokenizer reads the block): a changed file is a new key, never a stale answer.
Anything else (no ``__code__``, a source that is not a ``.py`` file or cannot be read) takes
``source_digest`` as it is; while the cache cannot be read or written, each digest is computed once a
process. The cache is one JSON file beside the template cache
(intentbus_local.template_cache.cache_dir).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from intentbus_local.template_cache import cache_dir

FILE_NAME = "pin-digests.json"
_files: dict[str, str | None] = {}
"""Source path -> sha256 of its bytes (None: unreadable), read once a process."""
_kept: dict[str, dict[str, str]] = {}
"""Cache file path -> its entries, read once a process."""


def digest(function: Callable[..., Any], compute: Callable[[Callable[..., Any]], str]) -> str:
    """``compute(function)`` (``pinning.source_digest``), kept per the function's file bytes and line."""
    key = _key(function)
    if key is None:
        return compute(function)
    path = cache_dir() / FILE_NAME
    entries = _entries(path)
    found = entries.get(key)
    if found is None:
        found = compute(function)
        entries[key] = found
        _write(path, entries)
    return found


def _key(function: Callable[..., Any]) -> str | None:
    unwrapped = inspect.unwrap(function)
    code = getattr(unwrapped, "__code__", None)
    if code is None or not code.co_filename.endswith(".py"):
        return None
    file_digest = _file_digest(code.co_filename)
    if file_digest is None:
        return None
    return f"{file_digest}:{code.co_firstlineno}:{sys.version_info[0]}.{sys.version_info[1]}"


def _file_digest(path: str) -> str | None:
    if path not in _files:
        try:
            _files[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            _files[path] = None
    return _files[path]


def _entries(path: Path) -> dict[str, str]:
    key = str(path)
    if key not in _kept:
        entries: dict[str, str] = {}
        with contextlib.suppress(OSError, ValueError):
            read = json.loads(path.read_text())
            if isinstance(read, dict):
                entries = {k: v for k, v in read.items() if isinstance(k, str) and isinstance(v, str)}
        _kept[key] = entries
    return _kept[key]


def _write(path: Path, entries: dict[str, str]) -> None:
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "w") as out:
            json.dump(entries, out, sort_keys=True)
        os.replace(temporary, path)  # whole or absent: a concurrent reader never sees half of it
