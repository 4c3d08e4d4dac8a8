"""Turns what other systems put on the bus (native envelope or CloudEvents) into an Envelope.

A CloudEvent is read by ``intentbus.cloudevent``; its data becomes the payload its type's model says.

Missing workflow fields are derived, deterministically, so the same event sent twice is
recognised as one: ``id`` from the content, ``run_id`` and ``trace_id`` from the id.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from intentbus.bus_event import EventBridgeModel
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.extensions import RUN_ENDED, ExtensionProblem, check_extensions
from intentbus.facts import PIPELINE_SOURCE, WORKFLOW_SOURCE
from intentbus.ids import content_id, derive_id, idempotency_key, input_identity
from intentbus.limits import MAX_PAYLOAD_BYTES, PUT_EVENTS_LIMIT_BYTES, SQS_MESSAGE_LIMIT_BYTES, json_bytes
from intentbus.model_shortcuts import dumped_json, model_validated, validated
from intentbus.registry import TypeRegistry, TypeSpec, UnknownType

if TYPE_CHECKING:
    from intentbus.cloudevent import EventData

MAX_BODY_BYTES = SQS_MESSAGE_LIMIT_BYTES
"""What SQS delivers at most. The event itself is held to what PutEvents accepted (``MAX_DETAIL_BYTES``),
measured once parsed: a body may escape the same text six times larger (``\u00e9``)."""
MAX_DETAIL_BYTES = PUT_EVENTS_LIMIT_BYTES
MAX_DEPTH = 64
"""Deeper JSON is refused: pydantic's serializer stops at 255 levels, and no event needs 64."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


def _no_constant(text: str) -> float:
    raise ValueError(f"{text} is not a JSON number")


_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)
"""``json.loads`` given options makes a decoder, and its C scanner, per call: this one is made once."""


def _strict_loads(body: str) -> Any:
    """``json.loads(body, parse_float=_finite, parse_constant=_no_constant)``: the same value or error."""
    if not isinstance(body, str) or body.startswith("\ufeff"):  # json.loads' own checks, its own words
        return json.loads(body, parse_float=_finite, parse_constant=_no_constant)
    return _DECODER.decode(body)


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether any value sits deeper than ``limit`` (the top one at depth 0); level by level, visiting
    only containers, since most values are scalars."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            if children and depth >= limit:
                return True
            below.extend(child for child in children if isinstance(child, dict | list))
        level, depth = below, depth + 1
    return False


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""Where a JSON text can hold a surrogate code point: escaped (a raw one is no valid ``str`` to encode)."""
_GROWTH = 5
"""How many times longer than its text a JSON value can be once dumped again: ``1e15`` (4 characters)
becomes ``1000000000000000.0`` (18); escapes only shrink."""


class _LastBody:
    """The last body read, what it parsed to, or the error it raised (one tuple, swapped whole, so a
    reader on another thread never pairs one body with another's parse): the handler reads a record's
    claimed ids before its stage parses the same body, so it is parsed once."""

    entry: tuple[str, Any, Exception | None] | None = None


def loads_body(body: str, *, keep: bool = True) -> Any:
    """``body`` parsed as strict JSON (finite numbers only); raises ``ValueError`` or ``RecursionError``.

    The same body object read again is not parsed again, until a reader that may change what it got
    passes ``keep=False``; a reader that keeps it must not change it."""
    entry = _LastBody.entry
    if entry is not None and entry[0] is body:
        if not keep:
            _LastBody.entry = None
        if entry[2] is not None:
            raise entry[2]
        return entry[1]
    try:
        parsed = _strict_loads(body)
    except (ValueError, RecursionError) as error:
        if keep:
            _LastBody.entry = (body, None, error)
        raise
    if keep:
        _LastBody.entry = (body, parsed, None)
    return parsed


def parse_bus_event(body: str) -> EventBridgeModel:
    """An SQS body delivered by an EventBridge rule, or a clear reason why it is not one."""
    try:
        size = len(body.encode())
    except UnicodeEncodeError:
        raise MalformedInput("body holds an unpaired surrogate, which is not text") from None
    if size > MAX_BODY_BYTES:
        raise MalformedInput(f"body is {size:,} bytes, over the 1 MiB an SQS message may have")
    try:
        raw = loads_body(body, keep=False)
    except RecursionError:
        raise MalformedInput(f"body is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:  # JSONDecodeError, a non-finite number, an integer of over 4,300 digits
        raise MalformedInput(f"body is not JSON: {error}") from None
    if not isinstance(raw, dict):
        raise MalformedInput(f"body is a JSON {type(raw).__name__}, not an EventBridge event object")
    # A value that deep needs more opening brackets than the whole text has (those in strings only add):
    # most bodies are not walked at all.
    if body.count("{") + body.count("[") > MAX_DEPTH and _too_deep(raw):
        raise MalformedInput(f"body is nested deeper than {MAX_DEPTH} levels")
    try:
        if _SURROGATE_ESCAPE.search(body):
            json.dumps(raw, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise MalformedInput(
            "body holds an unpaired surrogate escape (such as \\ud800), which is not text"
        ) from None
    if "detail" in raw and not isinstance(raw["detail"], dict):
        raise MalformedInput("detail is not a JSON object", field="detail")
    detail_size = json_bytes(raw.get("detail")) if size * _GROWTH > MAX_DETAIL_BYTES else 0
    if detail_size > MAX_DETAIL_BYTES:
        raise MalformedInput(f"detail is {detail_size:,} bytes as JSON, over the 256 KB an event may have")
    try:
        return validated(EventBridgeModel, raw)
    except ValidationError as error:
        raise MalformedInput.from_validation(error, EventBridgeModel) from None


def _registered_type(fields: dict[str, Any], bus_event: EventBridgeModel, registry: TypeRegistry) -> TypeSpec:
    """The type the envelope names (else the detail-type): one a workflow declares, not a pipeline fact."""
    type_name = fields.setdefault("event_type" if "event_type" in fields else "type", bus_event.detail_type)
    if not isinstance(type_name, str):
        raise MalformedInput("type must be a string", field="type")
    if type_name != bus_event.detail_type:
        raise MalformedInput(
            f"detail-type {bus_event.detail_type!r} does not match the envelope's type {type_name!r}",
            field="type",
        )
    try:
        spec = registry.get(type_name)
    except UnknownType:
        raise MalformedInput(
            f"unknown type {type_name!r}: no registered workflow declares it", field="type"
        ) from None
    if spec.owner == "intentbus":
        raise MalformedInput(
            f"type {type_name!r} is a pipeline fact; only the pipeline publishes it", field="type"
        )
    return spec


def _check_extensions(detail: dict[str, Any]) -> None:
    """A native envelope's ``extensions`` object, bounded as a CloudEvent's extension attributes are."""
    extensions = detail.get("extensions")
    if not isinstance(extensions, dict):
        return  # absent, or told by the envelope's own validation
    try:
        check_extensions(extensions)
    except ExtensionProblem as problem:
        raise MalformedInput(problem.reason, field=problem.field) from None


def _check_source(sent_as: str, claimed: Any) -> None:
    if PIPELINE_SOURCE in (sent_as, claimed):
        raise MalformedInput(f"source {PIPELINE_SOURCE!r} is reserved for the pipeline", field="source")
    if claimed != sent_as:
        raise MalformedInput(
            f"the envelope's source {claimed!r} is not the event's source {sent_as!r}: a producer "
            "speaks only as the source its policy lets it send",
            field="source",
        )


def _check_payload_size(payload: dict[str, Any]) -> None:
    """A payload over the hard maximum cannot travel even by claim check: it is refused here, told."""
    size = json_bytes(payload)
    if size > MAX_PAYLOAD_BYTES:
        raise MalformedInput(
            f"payload is {size:,} bytes as JSON, over the {MAX_PAYLOAD_BYTES:,} a payload may have",
            field="payload",
        )


def _fields_of(detail: dict[str, Any]) -> tuple[dict[str, Any], EventData | None]:
    """The envelope's fields ``detail`` gives, and a CloudEvent's data (``None`` for a native envelope).

    Only a CloudEvent needs the CloudEvents reader: the stages after validate, and a validate that has
    seen only native envelopes, never import it."""
    if "specversion" not in detail:
        return dict(detail), None
    from intentbus.cloudevent import read_cloudevent

    return read_cloudevent(detail)


def _refused_payload(error: ValidationError, spec: TypeSpec, data: EventData | None) -> MalformedInput:
    if data is not None:
        from intentbus.cloudevent import DataForm, missing_data

        if data.form is DataForm.ABSENT:
            return missing_data(spec)
    return MalformedInput.from_validation(error, spec.model, prefix="payload.")


def normalize(bus_event: EventBridgeModel, registry: TypeRegistry) -> tuple[Envelope, BaseModel]:
    """The accepted envelope, with its payload validated by the type's model."""
    detail = bus_event.detail
    if not isinstance(detail, dict):
        raise MalformedInput("detail is not a JSON object", field="detail")
    fields, data = _fields_of(detail)
    spec = _registered_type(fields, bus_event, registry)
    type_name = spec.name
    _check_source(bus_event.source, fields.get("source", bus_event.source))
    declared_kind = fields.setdefault("kind", spec.kind.value)
    if declared_kind != spec.kind.value:
        raise MalformedInput(f"{type_name!r} is a {spec.kind.value}, not a {declared_kind}", field="kind")

    if data is not None:
        from intentbus.cloudevent import payload_for

        fields["payload"] = payload_for(data, spec)
    _check_extensions(detail)

    if "timestamp" not in fields:
        fields.setdefault("time", bus_event.time)
    source = fields.setdefault("source", bus_event.source)
    if "id" not in fields:  # the content's id is canonical JSON of it all: made only when wanted
        fields["id"] = content_id(detail)
    event_id = fields["id"]
    if not isinstance(event_id, str):
        raise MalformedInput("id must be a string", field="id")
    tenant_id = fields.get("tenant_id")
    # Derived from the input's identity (tenant, source, id): two tenants or two sources sending the
    # same id start two runs.
    identity = input_identity(str(tenant_id), str(source), event_id)
    # Derived only when absent (an outcome event record published carries both): a derived id costs ~8k.
    if "run_id" not in fields:
        fields["run_id"] = f"run_{derive_id('run', identity).replace('-', '')[:20]}"
    run_id = fields["run_id"]
    if "trace_id" not in fields:
        fields["trace_id"] = f"tr_{derive_id('trace', identity).replace('-', '')}"
    fields.setdefault("step_index", 0)
    fields.setdefault("correlation_id", run_id)
    try:
        envelope = validated(Envelope, fields)
    except ValidationError as error:
        raise MalformedInput.from_validation(error, Envelope) from None
    if RUN_ENDED in envelope.extensions and bus_event.source != WORKFLOW_SOURCE:
        raise MalformedInput(
            f"{RUN_ENDED} is set by the pipeline, on the outcome that ends a run: a producer may not send it",
            field=RUN_ENDED if data is not None else f"extensions.{RUN_ENDED}",
        )
    _check_payload_size(envelope.payload)  # before the model reads it: no work on what cannot travel
    try:
        payload = model_validated(spec.model, envelope.payload)
    except ValidationError as error:
        raise _refused_payload(error, spec, data) from None
    update: dict[str, Any] = {"payload": dumped_json(payload)}
    _check_payload_size(update["payload"])  # as it travels, with the model's defaults filled in
    if spec.kind is Kind.COMMAND and envelope.idempotency_key is None:
        update["idempotency_key"] = idempotency_key(envelope.run_id, envelope.step_index, update["payload"])
    return envelope.model_copy(update=update), payload
