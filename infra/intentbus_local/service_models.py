"""botocore's service models read from its data files once per process, not once per session.

Every function's cold start in the local cloud, and each of moto's own clients, makes a botocore session
whose loader would read the same JSON files again (about a sixth of a second per service here). The
in-process local cloud (``backend.InProcessMoto``) shares them while it runs; tests and the fault
harness do so for their whole process. Tooling only: what ships to Lambda reads its own. The larger
files are also decoded from a cache on disk while it is open (service_model_cache), and each new session
copies botocore's built-in event handlers rather than registering them one by one (session_handlers).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from intentbus_local.service_model_cache import cached_service_data
from intentbus_local.session_handlers import copied_builtin_handlers

_loaded: dict[tuple[object, ...], dict[Any, Any]] = {}
"""botocore's loaded JSON data by (loader class, search paths, extras types): the files never change."""


@contextlib.contextmanager
def shared_service_models() -> Iterator[None]:
    """Every ``botocore.loaders.Loader`` made inside shares one cache per kind of loader.

    A botocore session reads its service models, endpoints and retry rules from JSON files once, into
    its loader's cache; a new session (each function's cold start in the local cloud, each of moto's
    own clients) reads them all again, about a sixth of a second per service here. The data is
    botocore's packaged files, the same in every process, and botocore already hands one loaded dict
    to every client of a session; sharing it across sessions changes no client's behaviour.
    """
    import botocore.loaders

    original = vars(botocore.loaders.Loader)["__init__"]

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        kind = (type(self), tuple(self._search_paths), tuple(self._extras_types), type(self.file_loader))
        self._cache = _loaded.setdefault(kind, {})

    setattr(botocore.loaders.Loader, "__init__", init)  # noqa: B010
    try:
        with cached_service_data(), copied_builtin_handlers():
            yield
    finally:
        setattr(botocore.loaders.Loader, "__init__", original)  # noqa: B010
