"""What reading and translating a template came to, kept on disk keyed by everything it depends on.

Decoding template.yaml (cfn-lint's YAML loader) and SAM's translation took ~0.9 s of CPU at every
start of a local cloud, for the same answer each time the template had not changed. An entry's key is
the sha256 of the step's name, the version of the library doing it and its whole input (the template's
text; the decoded template and the region), so an edit or an upgrade is a new entry, never a stale
one. Best effort: a cache that cannot be read or written is the step done anew; the newest 64
entries are kept. The folder is ``$INTENTBUS_CACHE_DIR``, else ``$XDG_CACHE_HOME/intentbus``, else
``~/.cache/intentbus``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

CACHE_DIR_ENV = "INTENTBUS_CACHE_DIR"
KEPT_ENTRIES = 64


def cache_dir() -> Path:
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "intentbus"


@functools.cache
def library_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def cached_json(step: str, distribution: str, source: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` (a JSON value), or what it returned for the same step, library version and source."""
    key = hashlib.sha256(f"{step}\0{library_version(distribution)}\0{source}".encode()).hexdigest()
    path = cache_dir() / f"{step}-{key[:32]}.json"
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text(encoding="utf-8"))
    value = compute()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(value, out)
        os.replace(temporary, path)  # whole or absent: a concurrent reader never sees half of it
        _prune(path.parent)
    return value


def _prune(folder: Path) -> None:
    """Keeps the newest ``KEPT_ENTRIES``: edited templates (tests write many) leave old entries behind."""
    entries = sorted(folder.glob("*.json"), key=lambda entry: entry.stat().st_mtime, reverse=True)
    for stale in entries[KEPT_ENTRIES:]:
        stale.unlink(missing_ok=True)
