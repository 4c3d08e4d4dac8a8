"""A new botocore session's built-in event handlers copied from one set registered once per process.

Every botocore session (each cold start of a function in the local cloud makes one) registers botocore's
~120 built-in handlers one at a time: each registration aliases its event name (a scan of botocore's
alias table, cached per emitter unless event_aliases shares it) and inspects the handler's signature
(``inspect.getfullargspec``). By callgrind, a cold start's session and its first three clients cost
63.5 M instructions with the aliases shared as the fault harness shares them, 51.3 M with the copy
(101.7 M and 56.0 M without event_aliases). The handlers
are botocore's module-level ``handlers.BUILTIN_HANDLERS``: the same objects, on the same events, in the
same order, for every session. While ``copied_builtin_handlers`` is open, a session made with botocore's
default emitter gets a copy of the handler trie of a prototype registered once (as botocore itself copies
a session's handlers for each of its clients, ``HierarchicalEmitter.__copy__``) and the event names
the prototype aliased: the same handlers in the same order, each session with its own emitter, its own
trie and its own caches. A change to ``BUILTIN_HANDLERS`` makes a new prototype. The one difference is
logging: botocore's debug line for each aliased name ("Changing event name from ...") is written once per
process, not once per session.
Pinned to botocore's ``Session._register_builtin_handlers`` and the emitter code it relies on: on a
botocore whose code moved, each session registers its own.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
from collections.abc import Callable, Iterator
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="botocore 1.44.8",
    sources={
        "botocore.session.Session._register_builtin_handlers": "0a4060d2bd379dac",
        # what the prototype's registrar stands in for
        "botocore.session.Session.register": "3a8abb582fd15a4e",
        # the emitter's whole state, and how botocore copies it
        "botocore.hooks.HierarchicalEmitter.__init__": "004a83ddd3e11e7f",
        "botocore.hooks.HierarchicalEmitter.__copy__": "93ddeaf4af44128f",
        # the aliaser's state (its ``_alias_event_name`` may be event_aliases', which keeps this cache)
        "botocore.hooks.EventAliaser.__init__": "5f62fa244cd5b37a",
    },
)

Register = Callable[[Any, Any], None]


@contextlib.contextmanager
def copied_builtin_handlers() -> Iterator[None]:
    """Sessions made while open copy their built-in handlers (opened again inside, it leaves the outer
    one's in place)."""
    import botocore.session

    session = botocore.session.Session
    with PINS.replaced_while_open(session, "_register_builtin_handlers", _copying, "copies_builtin_handlers"):
        yield


class _Registrar:
    """What ``Session._register_builtin_handlers`` uses of a session: its aliased emitter and ``register``."""

    def __init__(self) -> None:
        hooks = _hooks()
        self._original_handler: Any = hooks.HierarchicalEmitter()
        self._events: Any = hooks.EventAliaser(self._original_handler)

    def register(
        self, event_name: str, handler: Any, unique_id: Any = None, unique_id_uses_count: bool = False
    ) -> None:
        self._events.register(event_name, handler, unique_id, unique_id_uses_count=unique_id_uses_count)


_prototypes: dict[tuple[Any, ...], _Registrar] = {}
"""``tuple(BUILTIN_HANDLERS)`` -> the registrar that registered them (one entry, in practice)."""


def prototype(register: Register) -> _Registrar:
    """The built-in handlers as botocore's own ``register`` (``Session._register_builtin_handlers``)
    registers them on an empty emitter, for botocore's current ``BUILTIN_HANDLERS``."""
    from botocore import handlers

    key = tuple(handlers.BUILTIN_HANDLERS)
    found = _prototypes.get(key)
    if found is None:
        found = _Registrar()
        register(found, found._events)
        _prototypes.clear()
        _prototypes[key] = found
    return found


def _hooks() -> Any:
    """``botocore.hooks``, untyped: what is read here is the emitters' private state."""
    return importlib.import_module("botocore.hooks")


def _copying(register: Register) -> Register:
    hooks = _hooks()
    EVENT_ALIASES, EventAliaser, HierarchicalEmitter = (
        hooks.EVENT_ALIASES,
        hooks.EventAliaser,
        hooks.HierarchicalEmitter,
    )

    def _register_builtin_handlers(self: Any, events: Any) -> None:
        emitter: Any = getattr(self, "_original_handler", None)
        aliaser: Any = getattr(self, "_events", None)
        if not (
            events is aliaser
            and type(aliaser) is EventAliaser
            and aliaser._emitter is emitter
            and aliaser._event_aliases is EVENT_ALIASES
            and not aliaser._alias_name_cache
            and type(emitter) is HierarchicalEmitter
            and emitter._handlers._root == {"chunk": None, "children": {}, "values": None}
            and not emitter._unique_id_handlers
        ):
            register(self, events)  # hooks of the caller's own: registered as botocore does
            return
        source = prototype(register)
        emitter._handlers = copy.copy(source._original_handler._handlers)
        emitter._unique_id_handlers = {
            unique_id: dict(entry)
            for unique_id, entry in source._original_handler._unique_id_handlers.items()
        }
        emitter._lookup_cache = {}
        aliaser._alias_name_cache.update(source._events._alias_name_cache)

    _register_builtin_handlers.copies_builtin_handlers = True  # type: ignore[attr-defined]
    return _register_builtin_handlers
