"""Repairing a quarantined input event and resubmitting it through validate, with its lineage.

The same repair path as a model's malformed decision: a repairer (a model, or a person's edit) is
shown the refused event and why; its answer is validated here exactly as validate will; one more
attempt is made with the new error if it is still invalid, and then the repair gives up. A repaired
event goes back on the bus (so validate, dedup and every stage treat it as any other input) with
``causation_id`` set to the quarantined original's id and an id derived from it, so resubmitting the
same repair twice is deduplicated like any redelivery.

A CLI or a job calls ``repair_quarantined(message, repairer, types=catalog.types, submit=...)``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel

from intentbus.definition import MalformedDecision
from intentbus.envelope import Envelope
from intentbus.errors import IntentbusError, MalformedInput, PublishError
from intentbus.ids import derive_id
from intentbus.inbound import normalize, parse_bus_event
from intentbus.model_output import RawOutput
from intentbus.registry import TypeRegistry, UnknownType

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient

REPAIR_ATTEMPTS = 2
"""The repair, then one more with the validation error of the first."""
LOCKED_FIELDS = ("tenant_id", "type")
"""What a repair may not change: an event cannot be moved to another tenant or type by repairing it."""


@dataclass(frozen=True)
class Quarantined:
    """One quarantine record, as the quarantine queue holds it (see ``SqsQuarantine``)."""

    stage: str
    reason: str
    body: str
    field: str | None = None
    source_message_id: str | None = None
    body_truncated: bool = False

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Quarantined:
        return cls(
            stage=str(record["stage"]),
            reason=str(record["reason"]),
            body=str(record["body"]),
            field=None if record.get("field") is None else str(record["field"]),
            source_message_id=record.get("source_message_id") or record.get("message_id"),
            body_truncated=bool(record.get("body_truncated", False)),
        )

    @classmethod
    def from_message(cls, message_body: str) -> Quarantined:
        """From the quarantine queue's SQS message body (JSON)."""
        record = json.loads(message_body)
        if not isinstance(record, dict):
            raise ValueError("a quarantine message body is a JSON object")
        return cls.from_record(record)

    @property
    def bus_event(self) -> dict[str, Any] | None:
        """The quarantined body as an EventBridge event object, if it parses as one."""
        try:
            value = json.loads(self.body)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    @property
    def detail(self) -> dict[str, Any] | None:
        event = self.bus_event
        detail = None if event is None else event.get("detail")
        return detail if isinstance(detail, dict) else None

    @property
    def original_id(self) -> str:
        """The quarantined event's own id when it has one, else an id derived from its body."""
        detail = self.detail
        if detail is not None and isinstance(detail.get("id"), str) and detail["id"]:
            return str(detail["id"])
        return derive_id("quarantined", hashlib.sha256(self.body.encode(errors="replace")).hexdigest())


@dataclass(frozen=True)
class RepairRequest:
    """What a repairer is shown: the refused event (or the previous repair) and the error."""

    body: str
    reason: str
    field: str | None
    type_name: str | None
    payload_model: type[BaseModel] | None
    """The payload model of the type the event names, when the registry knows it."""
    attempt: int


class InputRepairer(Protocol):
    def repair_input(self, request: RepairRequest) -> Mapping[str, Any]:
        """The corrected event ``detail``; raise ``MalformedDecision`` when no repair is possible."""
        ...


@dataclass(frozen=True)
class ScriptedRepairer:
    """A repairer from a plain function: a person's edit, a rule, a test."""

    function: Callable[[RepairRequest], Mapping[str, Any]]

    def repair_input(self, request: RepairRequest) -> Mapping[str, Any]:
        return self.function(request)


class Submit(Protocol):
    def __call__(self, entry: Mapping[str, str]) -> None:
        """Put one PutEvents entry (``Source``, ``DetailType``, ``Detail``) on the bus, or raise."""
        ...


@dataclass(frozen=True)
class EventBridgeSubmit:
    """Resubmits to the bus validate listens to."""

    client: EventBridgeClient
    bus_name: str

    def __call__(self, entry: Mapping[str, str]) -> None:
        response = self.client.put_events(
            Entries=[
                {
                    "Source": entry["Source"],
                    "DetailType": entry["DetailType"],
                    "Detail": entry["Detail"],
                    "EventBusName": self.bus_name,
                }
            ]
        )
        if response.get("FailedEntryCount", 0):
            failed = response["Entries"][0]
            raise PublishError(
                f"resubmitting failed: {failed.get('ErrorCode')}: {failed.get('ErrorMessage')}"
            )


@dataclass(frozen=True)
class Resubmitted:
    """A repaired input as it was put on the ingress bus again."""

    envelope: Envelope
    """The event as validate accepts it; ``causation_id`` is the quarantined original's id."""
    entry: dict[str, str]
    """The PutEvents entry that was submitted."""
    original_id: str
    attempts: int


class RepairFailed(IntentbusError):
    """The repairer's answers were still invalid (or it gave none); the message stays in quarantine.

    Its message, which a caller may well log, names the last attempt's field and the answers' size and
    sha256 (``RawOutput`` of the attempts' ``raw``), never their text: validating a model's answer can
    quote it (its ``source``, its ``type``). ``attempts`` holds the errors and the answers, for a person.
    """

    code: ClassVar[str] = "repair_failed"

    def __init__(self, attempts: list[dict[str, Any]]) -> None:
        self.raw_output = RawOutput.of([attempt["raw"] for attempt in attempts])
        where = attempts[-1].get("field") or "no field named"
        reason = (
            f"still invalid after {len(attempts)} repair attempts (the last: {where}); "
            f"the answers: {self.raw_output.summary()}"
        )
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts
        """Each attempt's ``reason``, ``field``, raw answer (``raw``: the model's text, not for logs) and
        ``refused_by``: ``repairer`` (it gave no repaired input) or ``validation`` (``raw`` is the detail)."""


def repair_quarantined(
    message: Quarantined | Mapping[str, Any] | str,
    repairer: InputRepairer,
    *,
    types: TypeRegistry,
    submit: Submit,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    attempts: int = REPAIR_ATTEMPTS,
) -> Resubmitted:
    """Repair one quarantined input event and resubmit it through validate, with its lineage.

    ``message`` is a record (``Quarantined``, its dict, or the quarantine queue's message body).
    Raises ``RepairFailed`` (nothing submitted) if every attempt (``attempts``, two by default; the
    deployed repair function asks once) is invalid, and ``ValueError`` for a record that is not an
    input event quarantined by validate.
    """
    record = _record(message)
    if record.stage != "validate":
        raise ValueError(
            f"only input events quarantined by validate are repaired; this one was quarantined by "
            f"{record.stage} (redrive it once its cause is fixed)"
        )
    if record.body_truncated:
        raise ValueError("the quarantined body was truncated to fit the queue; it cannot be repaired whole")
    original = record.bus_event or {}
    original_detail = record.detail or {}
    original_id = record.original_id
    body, reason, field_name = record.body, record.reason, record.field
    tried: list[dict[str, Any]] = []
    for attempt in range(1, attempts + 1):
        type_name = _type_name(original, original_detail)
        request = RepairRequest(
            body=body,
            reason=reason,
            field=field_name,
            type_name=type_name,
            payload_model=_payload_model(types, type_name),
            attempt=attempt,
        )
        try:
            detail = dict(repairer.repair_input(request))
        except MalformedDecision as refused:
            tried.append(
                {
                    "reason": refused.reason,
                    "field": refused.field,
                    "raw": refused.raw,
                    "refused_by": "repairer",
                }
            )
            reason, field_name = refused.reason, refused.field
            continue
        try:
            entry = _entry(original, original_detail, detail, original_id, now)
            envelope, _ = normalize(parse_bus_event(_bus_body(entry)), types)
        except MalformedInput as invalid:
            tried.append(
                {"reason": invalid.reason, "field": invalid.field, "raw": detail, "refused_by": "validation"}
            )
            body = json.dumps({**original, "detail": detail}, ensure_ascii=False, default=str)
            reason, field_name = invalid.reason, invalid.field
            continue
        submit(entry)
        return Resubmitted(envelope=envelope, entry=entry, original_id=original_id, attempts=attempt)
    raise RepairFailed(tried)


def _record(message: Quarantined | Mapping[str, Any] | str) -> Quarantined:
    if isinstance(message, Quarantined):
        return message
    if isinstance(message, str):
        return Quarantined.from_message(message)
    return Quarantined.from_record(message)


def _type_name(original: Mapping[str, Any], detail: Mapping[str, Any]) -> str | None:
    for value in (original.get("detail-type"), detail.get("type"), detail.get("event_type")):
        if isinstance(value, str) and value:
            return value
    return None


def _payload_model(types: TypeRegistry, type_name: str | None) -> type[BaseModel] | None:
    if type_name is None:
        return None
    try:
        return types.get(type_name).model
    except UnknownType:
        return None


def _entry(
    original: Mapping[str, Any],
    original_detail: Mapping[str, Any],
    repaired: dict[str, Any],
    original_id: str,
    now: Callable[[], datetime],
) -> dict[str, str]:
    """The PutEvents entry of the repaired event: its lineage set, its tenant and type unchanged."""
    for name in LOCKED_FIELDS:
        before = original_detail.get(name)
        if isinstance(before, str) and repaired.get(name, before) != before:
            raise MalformedInput(f"the repair changed {name} from {before!r}: it may not", field=name)
    if isinstance(original_detail.get("tenant_id"), str):
        repaired["tenant_id"] = original_detail["tenant_id"]
    repaired.pop("causationid", None)  # the CloudEvents spelling would disagree with the lineage
    repaired["causation_id"] = original_id
    repaired["id"] = derive_id(original_id, "repair")
    detail_type = original.get("detail-type") or repaired.get("type") or repaired.get("event_type")
    source = original.get("source") or repaired.get("source")
    if not isinstance(detail_type, str) or not detail_type:
        raise MalformedInput("the repaired event names no type", field="type")
    if not isinstance(source, str) or not source:
        raise MalformedInput("the repaired event names no source", field="source")
    if "time" not in repaired and "timestamp" not in repaired:
        time = original.get("time")
        repaired["time"] = time if isinstance(time, str) and time else now().isoformat()
    return {
        "Source": source,
        "DetailType": detail_type,
        "Detail": json.dumps(repaired, ensure_ascii=False, default=str),
    }


def _bus_body(entry: Mapping[str, str]) -> str:
    """The entry as validate will receive it from the bus, to validate it here first."""
    return json.dumps(
        {
            "version": "0",
            "id": "repair",
            "detail-type": entry["DetailType"],
            "source": entry["Source"],
            "account": "000000000000",
            "time": "1970-01-01T00:00:00Z",  # the detail's own time (always set) is the event's
            "region": "local",
            "resources": [],
            "detail": json.loads(entry["Detail"]),
        }
    )
