"""botocore's case-insensitive ``HeadersDict`` answering its lookups from a dict keyed by lowercase names.

``HeadersDict`` (found on botocore 1.44.8) keys its dict by ``_HeaderKey`` objects: every ``[]``,
``get`` and ``in`` builds one (a Python ``__init__``, then ``__hash__`` and ``__eq__``), and ``in`` or
``get`` on a missing name goes through ``MutableMapping``'s ``try: self[key] except KeyError``; every
iteration calls ``__str__`` per name. On the direct path (intentbus_local.direct_calls) a call's request
headers are read about ten times by moto's handler (``Authorization``, ``host``, ``x-moto-account-id``,
``User-Agent``, ``X-Amz-Target``, ...) and its response headers by botocore's parser (the request id,
then a lowercase copy for ``ResponseMetadata``): 120,000 lookups in 40 fault schedules.

``IndexedHeaders`` keeps botocore's dict as it is (its ``repr`` and ``copy`` are botocore's) and, beside
it, each lowercase name's value and the name it was first set with, so a lookup is one ``str.lower``
and one dict lookup, and iteration yields the names in botocore's order (a name set again keeps its
first spelling and place, as a dict keeps its first key). Built only from ``str`` names, as the direct
path builds it. Pinned to botocore's code (``PINS``); tested against ``HeadersDict`` on generated
operations in tests/integration/test_direct_calls.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.awsrequest import HeadersDict, _HeaderKey

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="botocore 1.44.8",
    sources={
        "botocore.awsrequest.HeadersDict.__init__": "92bd480433707191",
        "botocore.awsrequest.HeadersDict.__setitem__": "8442c519e257dc39",
        "botocore.awsrequest.HeadersDict.__getitem__": "373982f2ae920bd2",
        "botocore.awsrequest.HeadersDict.__delitem__": "762e4cf691f1afe7",
        "botocore.awsrequest.HeadersDict.__iter__": "c8c1cca0c23e69c5",
        "botocore.awsrequest._HeaderKey.__init__": "f8f0171061dee798",
        "botocore.awsrequest._HeaderKey.__hash__": "d174de82cc2b685d",
        "botocore.awsrequest._HeaderKey.__eq__": "d378508f4346c118",
        "botocore.awsrequest._HeaderKey.__str__": "ca51e259b8009880",
    },
)
_MISSING = object()


class IndexedHeaders(HeadersDict):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._values: dict[str, Any] = {}
        self._names: dict[str, str] = {}
        super().__init__(*args, **kwargs)

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        lower = key.lower()
        self._values[lower] = value
        self._names.setdefault(lower, key)

    def __getitem__(self, key: str) -> Any:
        value = self._values.get(key.lower(), _MISSING)
        if value is _MISSING:
            raise KeyError(_HeaderKey(key))  # as botocore's own lookup raises it
        return value

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        lower = key.lower()
        del self._values[lower]
        del self._names[lower]

    def __contains__(self, key: object) -> bool:
        return key.lower() in self._values  # type: ignore[attr-defined]

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(key.lower(), default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names.values())
