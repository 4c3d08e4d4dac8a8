"""botocore's event-name aliasing worked out once per process rather than once per client.

Every event a botocore client emits or registers goes through ``EventAliaser._alias_event_name``
(found on botocore 1.44.8), which rewrites old service names in it (``EVENT_ALIASES``, 65 of them).
It keeps what it worked out in a dict per aliaser, and each client has its own aliaser, so every new
client works each event name out again: for each of the 65 aliases it splits the name and looks the
alias up in its parts (a ``ValueError`` per alias that is not there), ~120 microseconds a name. The
local cloud makes a client in every cold start of every function: in 40 fault schedules 125 aliasers
worked out 5,400 names, about 0.7 s of CPU.

The answer depends only on the name and the aliases, so while an aliaser's aliases are what
botocore's ``EVENT_ALIASES`` held when this module first read it (a client's aliaser holds a copy of
them), a name worked out by one aliaser is given to the next from a process-wide dict (and kept in
the aliaser's own cache, with botocore's debug line when it renames). An aliaser with other aliases
goes through botocore's code. Installed with the local cloud's hot paths while ``PINS`` holds; tested
against botocore's own in tests/integration/test_event_aliases.py.
"""

from __future__ import annotations

from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="botocore 1.44.8",
    sources={
        "botocore.hooks.EventAliaser.__init__": "5f62fa244cd5b37a",
        "botocore.hooks.EventAliaser._alias_event_name": "a85d1476ec44b694",
        "botocore.hooks.EventAliaser._replace_subsection": "c2a866969f00c61f",
    },
)


def apply() -> None:
    """Idempotent; nothing is replaced on a botocore whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from botocore.hooks import EventAliaser

    if "EventAliaser._alias_event_name" not in PINS.replaced:
        PINS.replace(EventAliaser, "_alias_event_name", _alias_event_name_for(EventAliaser))


def _alias_event_name_for(aliaser_class: Any) -> Any:
    from botocore import hooks

    original = vars(aliaser_class)["_alias_event_name"]
    as_read = dict(hooks.EVENT_ALIASES)
    shared: dict[str, str] = {}

    def _alias_event_name(self: Any, event_name: str) -> str:
        own = self._alias_name_cache
        if event_name in own:
            return own[event_name]  # type: ignore[no-any-return]
        if self._event_aliases != as_read:  # a client's aliaser holds a copy of them
            return original(self, event_name)  # type: ignore[no-any-return]
        found = shared.get(event_name)
        if found is None:
            worked_out: str = original(self, event_name)
            shared[event_name] = worked_out
            return worked_out
        if found != event_name:
            hooks.logger.debug("Changing event name from %s to %s", event_name, found)
        own[event_name] = found
        return found

    return _alias_event_name
