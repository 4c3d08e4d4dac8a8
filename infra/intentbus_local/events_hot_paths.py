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
``_does_event_match``, which only looks paths up.

``put_events`` itself (``matching_first``, which moto_fixes' size check wraps) builds a rule's message
only for a rule whose pattern matches: the entry's message without the two per-rule fields is
flattened once, each rule's two clock reads are made as moto makes them and matched with that flat
form, and a rule that does not match is skipped, as its ``send_to_targets`` would return at once. Of
the pipeline bus's six rules one or two match an entry, so five ``Detail`` parses, deep copies and
flattenings of six are saved.

For each rule ``put_events`` starts the message from ``copy.deepcopy(_BASE_EVENT_MESSAGE)``, a
constant of nine fields; the module's name is rebound to an equal dict whose ``__deepcopy__`` builds
the same fresh plain dict directly (its texts shared, a new empty list and dict), while a deepcopy is
the only use moto's EventBridge module makes of it (``base_message_uses``).

Each target's input is then built by ``EventTemplateParser.parse``, which evaluates every path of the
target's input paths map (without one: the eight of the default map, ``$.id``, ``$.detail``, ...) with
jsonpath_ng over the message, twice per entry for the pipeline bus (its queue's rule and the archive).
The replacement is moto's code but for that lookup: a path that jsonpath_ng parses to a single field
of the root (``Child(Root(), Fields(name))``, checked once per path) is looked up in the message dict
as jsonpath_ng would (``dict.get``); any other path, or a message that is not a dict, goes through
jsonpath_ng. Pinned by tests/integration/test_events_hot_paths.py.

While ``_deliver`` hands a rule the message it matched, two steps of moto's ``send_to_targets`` are
known in advance: its first, matching the rule's pattern against that message, answers True (the match
was just made on the same flat form), and each target's ``parse`` dumps the whole message for the
``<aws.events.event.json>`` placeholder, and the text of each input path's value (the detail's dump,
among them), even where the template does not name them, which can only discard the text (the message
is plain JSON data: its detail from ``json.loads``, texts, finite numbers and a list of texts, so no
text of it can raise). Those are skipped for that message; any other message, or a placeholder the
template names, takes moto's steps. For the same reason such a message is
flattened for matching as it is, without its trip through JSON (a dump and a parse of its detail).
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import math
import warnings
from collections.abc import Callable
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
        "moto.events.utils.EventTemplateParser.parse": "40a5a46a321811bb",
        # why a message's dump that replaces nothing may be left out: a dict's text is json.dumps of it
        "moto.events.utils.EventTemplateParser._stringify": "ed44a617a21bf0df",
    },
)
PUT_EVENTS_PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.events.models.EventsBackend.put_events": "c56f6ac1f932c70d",
        # why a rule whose pattern does not match may be skipped: its first step returns on no match
        "moto.events.models.Rule.send_to_targets": "472e002e2dab8a59",
    },
)
"""moto's own of these two is what moto_fixes wrapped (its size check, its disabled rules): it hands
them to ``matching_first``."""
JSONPATH_PINS = Pins(
    found_on="jsonpath-ng 1.7.0",
    sources={
        # what ``Child(Root(), Fields(name)).find(message)`` does for a dict message: ``message.get(name)``
        "jsonpath_ng.jsonpath.Child.find": "56216b49c1c2f4e0",
        "jsonpath_ng.jsonpath.Root.find": "16a7f7fef0ae6b03",
        "jsonpath_ng.jsonpath.Fields.find": "4a0f07e6445a5cc0",
        "jsonpath_ng.jsonpath.Fields._find_base": "165089b8ec2da303",
        "jsonpath_ng.jsonpath.Fields._is_wildcard_on_array": "7ee6c1bf2e2605e0",
        "jsonpath_ng.jsonpath.Fields.reified_fields": "2f1416005f450f38",
        "jsonpath_ng.jsonpath.Fields.get_field_datum": "3288b7cba24679bb",
    },
)
_PER_RULE = ("time", "ingestion-time")

_last: list[tuple[str, dict[str, Any]]] = []
"""The last event's JSON text (without the per-rule fields) and its flattened form."""
_sending: list[Any] = [None, None]
"""The message ``_deliver`` is handing to ``send_to_targets`` and the pattern it matched (else None)."""
_EVENT_JSON = "<aws.events.event.json>"


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.events.models import EventPattern

    PINS.replace(EventPattern, "matches_event", _matches_event)
    _base_message_copied_directly()
    if JSONPATH_PINS.holds():
        from moto.events.utils import EventTemplateParser

        PINS.replace(EventTemplateParser, "parse", staticmethod(_parse))


def _matches_event(pattern: Any, event: dict[str, Any]) -> bool:
    if not pattern._pattern or (event is _sending[0] and pattern is _sending[1]):
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
            flat[name] = _through_json(event[name])
    return flat


def _through_json(value: Any) -> Any:
    """``json.loads(json.dumps(value))``: a text, an integer or a finite float comes back equal."""
    if type(value) in (str, int) or (type(value) is float and math.isfinite(value)):
        return value
    return json.loads(json.dumps(value))


def matching_first(
    moto_put_events: Callable[..., Any], moto_send_to_targets: Callable[..., Any]
) -> Callable[..., Any]:
    """``EventsBackend.put_events`` that builds a rule's message only when its pattern matches (see
    ``_put_events``), or moto's own (``moto_put_events``) on a moto whose code moved."""
    PUT_EVENTS_PINS.replaced.setdefault("EventsBackend.put_events", moto_put_events)
    PUT_EVENTS_PINS.replaced.setdefault("Rule.send_to_targets", moto_send_to_targets)
    return _put_events if PINS.holds() and PUT_EVENTS_PINS.holds() else moto_put_events


def _put_events(backend: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """moto 5.2.6's ``EventsBackend.put_events``, but for the loop over the bus's rules.

    moto builds every rule's message (a deep copy of the base message, ``Detail`` parsed again, two
    clock reads) and hands it to ``Rule.send_to_targets``, whose first step is to return when the
    rule's pattern does not match it. Here the entry's message without its per-rule fields is
    flattened once; for each rule the two clock reads are made as moto makes them, and the pattern is
    matched against that flat form with those two fields added (what ``_matches_event`` does with the
    rule's message). A rule that matches gets its message built as moto builds it and sent through
    ``rule.send_to_targets``; one that does not is skipped, as its ``send_to_targets`` would return.
    A clock value that is not a text or a number takes moto's own steps for that rule.
    """
    from moto.events.exceptions import ValidationException

    models = _models()

    num_events = len(events)

    if num_events > 10:
        # the exact error text is longer, the Value list consists of all the put events
        raise ValidationException(
            "1 validation error detected: "
            "Value '[PutEventsRequestEntry]' at 'entries' failed to satisfy constraint: "
            "Member must have length less than or equal to 10"
        )

    entries: list[dict[str, Any]] = []
    for event in events:
        if not event.get("Source"):
            entries.append(
                {
                    "ErrorCode": "InvalidArgument",
                    "ErrorMessage": "Parameter Source is not valid. Reason: Source is a required argument.",
                }
            )
        elif not event.get("DetailType"):
            entries.append(
                {
                    "ErrorCode": "InvalidArgument",
                    "ErrorMessage": "Parameter DetailType is not valid. "
                    "Reason: DetailType is a required argument.",
                }
            )
        elif not event.get("Detail"):
            entries.append(
                {
                    "ErrorCode": "InvalidArgument",
                    "ErrorMessage": "Parameter Detail is not valid. Reason: Detail is a required argument.",
                }
            )
        else:
            try:
                detail = json.loads(event["Detail"])
                if not isinstance(detail, dict):
                    warnings.warn(
                        f"EventDetail should be of type dict - types such as {type(detail)} "
                        "are ignored by AWS",
                        stacklevel=2,
                    )
            except ValueError:  # json.JSONDecodeError exists since Python 3.5
                entries.append(
                    {
                        "ErrorCode": "MalformedDetail",
                        "ErrorMessage": "Detail is malformed.",
                    }
                )
                continue

            event_id = str(models.random.uuid4())
            entries.append({"EventId": event_id})
            _deliver(backend, event, event_id)

    return entries


def _deliver(backend: Any, event: dict[str, Any], event_id: str) -> None:
    """moto's loop over the bus's rules for one entry, each rule's message built when its pattern matches."""
    models = _models()

    # if 'EventBusName' is not especially set, it will be sent to the default one
    event_bus_name = backend._normalize_event_bus_arn(event.get("EventBusName"))

    event_bus = backend.describe_event_bus(event_bus_name)
    flat_rest: dict[str, Any] | None = None
    plain = _plain_entry(event)
    for rule in event_bus.rules.values():
        sent_at = event.get("Time", models.unix_time())
        detail = json.loads(event["Detail"]) if flat_rest is None else None
        ingested = models.unix_time()
        if flat_rest is None:
            flat_rest = _flat_rest(_message(backend, event, event_id, sent_at=None, detail=detail), plain)
        matched = _flat_time(sent_at) and _flat_time(ingested)
        if matched:
            pattern = rule.event_pattern
            if pattern._pattern and not pattern._does_event_match(
                {**flat_rest, "time": sent_at, "ingestion-time": ingested}, pattern._pattern
            ):
                continue
        if detail is None:
            detail = json.loads(event["Detail"])
        message = _message(backend, event, event_id, sent_at=sent_at, detail=detail)
        message["ingestion-time"] = ingested
        if not (matched and plain):
            rule.send_to_targets(message)
            continue
        outer = list(_sending)  # a target on another bus puts its events from inside
        _sending[:] = [message, rule.event_pattern]
        try:
            rule.send_to_targets(message)
        finally:
            _sending[:] = outer


def _plain_entry(event: dict[str, Any]) -> bool:
    """Whether the message built of this entry is plain JSON data but for its clock values (checked
    apart): texts for its type and source, a list of texts for its resources (its detail comes from
    ``json.loads``, its account and region are the backend's texts)."""
    resources = event.get("Resources", [])
    return (
        type(event.get("DetailType")) is str
        and type(event.get("Source")) is str
        and type(resources) is list
        and all(type(resource) is str for resource in resources)
    )


def _message(
    backend: Any, event: dict[str, Any], event_id: str, *, sent_at: Any, detail: Any
) -> dict[str, Any]:
    """A rule's message as moto's ``put_events`` builds it, but for ``ingestion-time``."""
    event_msg: dict[str, Any] = copy.deepcopy(_models()._BASE_EVENT_MESSAGE)
    event_msg["id"] = event_id
    event_msg["detail-type"] = event["DetailType"]
    event_msg["source"] = event["Source"]
    event_msg["account"] = backend.account_id
    event_msg["time"] = sent_at
    event_msg["region"] = backend.region_name
    event_msg["resources"] = event.get("Resources", [])
    event_msg["detail"] = detail
    return event_msg


def _models() -> Any:
    """moto.events.models, whose names (``random``, ``unix_time``, ``_BASE_EVENT_MESSAGE``) are read
    where moto's ``put_events`` reads them."""
    from moto.events import models

    return models


def _flat_rest(message: dict[str, Any], plain: bool = False) -> dict[str, Any]:
    """``flattened`` of the message without its per-rule fields (cached on the message's text); of a
    plain message (``_plain_entry``), flattened as it is: its trip through JSON would give it back equal,
    of the same types, so only the dump and parse are left out."""
    rest = {name: value for name, value in message.items() if name not in _PER_RULE}
    if plain:
        from moto.events.models import EventPattern

        return EventPattern._flatten_dict(rest)
    return flattened(rest)


def _flat_time(value: Any) -> bool:
    """Whether ``_through_json`` gives the value itself, as flattening would."""
    return type(value) in (str, int) or (type(value) is float and math.isfinite(value))


_NOT_SET = object()


def _parse(input_template: str, input_paths_map: dict[str, Any], event: Any) -> dict[str, Any]:
    """``EventTemplateParser.parse`` on moto 5.2.6, but for a path naming one field of the root."""
    import jsonpath_ng.ext
    from moto.events.utils import EventTemplateParser

    stringify = EventTemplateParser._stringify
    template_to_use = input_template or EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE
    input_paths_map = input_paths_map or EventTemplateParser.DEFAULT_EVENT_INPUT_PATHS_MAP
    plain = event is _sending[0]  # its values' texts cannot raise: one that replaces nothing is not made
    for input_path in input_paths_map:
        path = input_paths_map[input_path]
        field = _root_field(path) if type(event) is dict and type(path) is str else None
        if field is not None:
            value = event.get(field, _NOT_SET)
            found = value is not _NOT_SET
        else:
            input_expr = jsonpath_ng.ext.parse(path)  # type: ignore[attr-defined]
            matches = input_expr.find(event)
            found = bool(matches)
            value = matches[0].value if found else None
        if not found or (plain and f"<{input_path}>" not in template_to_use):
            continue
        result = stringify(value)
        if result:
            template_to_use = template_to_use.replace(f"<{input_path}>", result)

    default_inputs_map = {
        "aws.events.event.json": event,
        "aws.events.event.ingestion-time": event["ingestion-time"],
    }
    for input_path, value in default_inputs_map.items():
        if plain and value is event and _EVENT_JSON not in template_to_use:
            continue  # its dump would replace nothing
        template_to_use = template_to_use.replace(f"<{input_path}>", stringify(value))

    return json.loads(template_to_use)  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=256)
def _root_field(path: str) -> str | None:
    """The field name when jsonpath_ng parses ``path`` to ``Child(Root(), Fields(name))``, else None."""
    import jsonpath_ng.ext
    from jsonpath_ng.jsonpath import Child, Fields, Root, auto_id_field

    try:
        parsed = jsonpath_ng.ext.parse(path)  # type: ignore[attr-defined]
    except Exception:  # moto's own path raises it again
        return None
    if type(parsed) is not Child or type(parsed.left) is not Root or type(parsed.right) is not Fields:
        return None
    fields = parsed.right.fields
    if parsed.right._deprecated_wildcard_use or len(fields) != 1 or fields[0] == auto_id_field:
        return None
    return str(fields[0])


BASE_MESSAGE_USES = ("_BASE_EVENT_MESSAGE,", "event_msg = copy.deepcopy(_BASE_EVENT_MESSAGE)")
"""Each line of moto.events.models naming ``_BASE_EVENT_MESSAGE`` on 5.2.6: its import, and one deepcopy."""


class _BaseEventMessage(dict[str, Any]):
    """moto's base event message, whose deep copy is built without walking it."""

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        fresh: dict[str, Any] = {}
        for name, value in self.items():
            if type(value) is str:
                fresh[name] = value
            elif type(value) in (list, dict) and not value:
                fresh[name] = type(value)()
            else:
                fresh[name] = copy.deepcopy(value, memo)
        return fresh


def base_message_uses() -> list[str]:
    """Each line of moto.events.models naming ``_BASE_EVENT_MESSAGE``, stripped."""
    from moto.events import models

    return [line.strip() for line in inspect.getsource(models).splitlines() if "_BASE_EVENT_MESSAGE" in line]


def _base_message_copied_directly() -> None:
    from moto.events import models

    base = models._BASE_EVENT_MESSAGE  # type: ignore[attr-defined]
    if type(base) is not dict:  # already rebound
        return
    if base_message_uses() != list(BASE_MESSAGE_USES):
        return
    models._BASE_EVENT_MESSAGE = _BaseEventMessage(base)  # type: ignore[attr-defined,assignment]
