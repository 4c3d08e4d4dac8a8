"""botocore's larger data files decoded once, then read back from a cache on disk in later processes.

A local cloud's start decoded about forty of botocore's JSON files (service models, endpoint rules; EC2's
alone is 4 MB), a fifth of a second of CPU for the same answer every time. Each file of at least
``SMALLEST_CACHED`` bytes (as stored: gzip-compressed, mostly) is kept beside the template cache in
``pickle``'s format: botocore decodes JSON objects as ``OrderedDict`` (its ``object_pairs_hook``), which
``marshal`` cannot hold, and pickle reads them back in about half the time. An entry is keyed by the
file's own bytes, the Python version and the pickle protocol, so an upgraded botocore or another
interpreter is a miss, never a stale answer; a miss (or a cache that cannot be read or written) is the
file decoded by botocore's own ``_load_file``. The folder is the user's own cache
(intentbus_local.template_cache.cache_dir), trusted as Python trusts its own ``__pycache__``.
Pinned to botocore's ``JSONFileLoader._load_file``: on a botocore whose code moved, nothing is cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from intentbus_local.pinning import Pins
from intentbus_local.template_cache import cache_dir

PINS = Pins(
    found_on="botocore 1.44.8",
    sources={"botocore.loaders.JSONFileLoader._load_file": "8e9da7ac3d7d5c30"},
)
FOLDER = "botocore-data"
SMALLEST_CACHED = 16 * 1024
"""Smaller files decode faster than their entry is found and read."""
_PROTOCOL = pickle.HIGHEST_PROTOCOL


@contextlib.contextmanager
def cached_service_data() -> Iterator[None]:
    """``botocore.loaders.JSONFileLoader._load_file`` served from the cache while open (opened again
    inside, it leaves the outer one's in place)."""
    import botocore.loaders

    loader = botocore.loaders.JSONFileLoader
    with PINS.replaced_while_open(loader, "_load_file", _cached, "caches_service_data"):
        yield


def _cached(decode: Callable[[Any, str, Any], Any]) -> Callable[[Any, str, Any], Any]:
    def _load_file(self: Any, full_path: str, open_method: Any) -> Any:
        try:
            raw = Path(full_path).read_bytes() if os.path.isfile(full_path) else b""
        except OSError:
            raw = b""
        if len(raw) < SMALLEST_CACHED:
            return decode(self, full_path, open_method)
        path = entry_path(full_path, raw)
        with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError):
            return pickle.loads(path.read_bytes())
        value = decode(self, full_path, open_method)
        with contextlib.suppress(OSError, pickle.PicklingError):
            path.parent.mkdir(parents=True, exist_ok=True)
            for stale in path.parent.glob(f"{_name(full_path)}-*.pickle"):
                if stale != path:
                    stale.unlink(missing_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(handle, "wb") as out:
                pickle.dump(value, out, protocol=_PROTOCOL)
            os.replace(temporary, path)  # whole or absent: a concurrent reader never sees half of it
        return value

    _load_file.caches_service_data = True  # type: ignore[attr-defined]
    return _load_file


def entry_path(full_path: str, raw: bytes) -> Path:
    """Where the decoded ``full_path`` (whose bytes are ``raw``) is kept."""
    key = hashlib.sha256(raw + f"\0{sys.version}\0{_PROTOCOL}".encode()).hexdigest()[:32]
    return cache_dir() / FOLDER / f"{_name(full_path)}-{key}.pickle"


def _name(full_path: str) -> str:
    """``ec2/2016-11-15/service-2.json.gz`` (the path below botocore's data folder) as one file name."""
    parts = Path(full_path).parts
    return ".".join(parts[-3:])
