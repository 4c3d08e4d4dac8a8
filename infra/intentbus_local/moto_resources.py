"""moto's packaged data files (EC2's instance types and their offerings) decoded once, then kept on disk.

Importing moto's CloudFormation imports EC2's models, which decode about 90 gzipped JSON files at import
(instance types, and their offerings by region and zone): ~0.16 s of CPU at every start of a local
cloud, for data nothing here uses. The decoded value is kept beside the template cache in ``marshal``'s
format (about half the cost to read back), keyed by the file's own bytes and the Python version, so
a moto upgrade or another interpreter is a miss, never a stale answer. Best effort, as the template
cache: a file that cannot be read or written is decoded as moto does.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from intentbus_local.template_cache import cache_dir

FOLDER = "moto-resources"


@contextlib.contextmanager
def cached_moto_resources() -> Iterator[None]:
    """``moto.utilities.utils.load_resource`` served from the cache while moto's modules import (a module
    that imported the name meanwhile keeps the cached one: it returns what moto's would)."""
    from moto.utilities import utils

    original = utils.load_resource
    setattr(utils, "load_resource", _cached(original, utils.load_resource_as_bytes))  # noqa: B010
    try:
        yield
    finally:
        setattr(utils, "load_resource", original)  # noqa: B010


def _cached(decode: Callable[[str], Any], read: Callable[[str], bytes]) -> Callable[[str], Any]:
    def load_resource(resource: str) -> Any:
        compressed = resource if resource.endswith(".gz") else f"{resource}.gz"
        try:
            raw = read(compressed)
        except FileNotFoundError:
            return decode(resource)  # moto's plain-text resources: small, left as they are
        key = hashlib.sha256(raw + sys.version.encode()).hexdigest()[:32]
        name = compressed.replace("/", ".")
        path = cache_dir() / FOLDER / f"{name}-{key}.marshal"
        with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
            return marshal.loads(path.read_bytes())
        value = decode(resource)
        with contextlib.suppress(OSError, ValueError):
            path.parent.mkdir(parents=True, exist_ok=True)
            for stale in path.parent.glob(f"{name}-*.marshal"):
                stale.unlink(missing_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(handle, "wb") as out:
                marshal.dump(value, out)
            os.replace(temporary, path)  # whole or absent: a concurrent reader never sees half of it
        return value

    return load_resource
