"""moto's EventBridge matching each entry's event against a bus's rules with one parse of the event.

On moto 5.2.6 ``EventsBackend.put_events`` builds the event message afresh for every rule of the bus and
``EventPattern.matches_event`` normalizes it through JSON (``json.loads(json.dumps(event))``) and
flattens it into ``{"detail.a.b": value}`` before looking the pattern's paths up, once per rule: the
pipeline bus has six rules, so an entry was parsed and flattened six times over. The messages built for
one entry differ only in ``time`` and ``ingestion-time`` (read from the clock per rule).

The replacement flattens the rest of the event once per JSON text and adds those two fields to a copy:
``_flatten_dict`` of a top-level dict treats each top-level key on its own, so the result is the one
moto's own gives (the two fields, when they are not objects, are flat entries under their own names;
when either is an object, moto's own code runs). The pattern is then matched by moto's own
``_does_event_match``, which only looks paths up. Pinned by tests/integration/test_events_hot_paths.py.
"""

from __future__ import annotations

import json
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.events.models.EventPattern.matches_event": "3e71eb7ff5903b50",
        # why the flattened rest and the two fields can be flattened apart: each top-level key on its own
        "moto.events.models.EventPattern._flatten_dict": "26dca5bdb2739a2c",
        # why a shared flattened event may be handed to it: it only reads it (``event_flat.get``)
        "moto.events.models.EventPattern._does_event_match": "3c96a8f9478ba99a",
    },
)
_PER_RULE = ("time", "ingestion-time")
_last: list[tuple[str, dict[str, Any]]] = []
"""The last event's JSON text (without the per-rule fields) and its flattened form."""


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.events.models import EventPattern

    PINS.replace(EventPattern, "matches_event", _matches_event)


def _matches_event(pattern: Any, event: dict[str, Any]) -> bool:
    if not pattern._pattern:
        return True
    if any(isinstance(event.get(name), dict) for name in _PER_RULE):
        return bool(PINS.moto_original("EventPattern.matches_event")(pattern, event))
    return bool(pattern._does_event_match(flattened(event), pattern._pattern))


def flattened(event: dict[str, Any]) -> dict[str, Any]:
    """What ``EventPattern._flatten_dict(json.loads(json.dumps(event)))`` gives for an event whose
    ``time`` and ``ingestion-time`` (if any) are not objects."""
    from moto.events.models import EventPattern

    text = json.dumps({name: value for name, value in event.items() if name not in _PER_RULE})
    found = _last[0] if _last else None
    if found is None or found[0] != text:
        found = (text, EventPattern._flatten_dict(json.loads(text)))
        _last[:] = [found]
    flat = dict(found[1])
    for name in _PER_RULE:
        if name in event:
            flat[name] = json.loads(json.dumps(event[name]))
    return flat
