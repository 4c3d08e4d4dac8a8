"""What an operator wants to know of a queued message: the EventBridge event inside, and when it came."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from intentbus_cli.queue_moves import QueuedMessage


@dataclass(frozen=True)
class EventFacts:
    """Fields of an EventBridge event body (``detail`` holding an envelope); '-' when absent."""

    type: str
    source: str
    tenant_id: str
    run_id: str
    event_id: str


def parse(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def event_facts(body: str) -> EventFacts:
    event = parse(body)
    if not isinstance(event, dict):
        return EventFacts("-", "-", "-", "-", "-")
    detail = event.get("detail")
    envelope: dict[str, Any] = detail if isinstance(detail, dict) else {}
    return EventFacts(
        type=str(event.get("detail-type") or envelope.get("type") or envelope.get("event_type") or "-"),
        source=str(event.get("source") or "-"),
        tenant_id=str(envelope.get("tenant_id") or envelope.get("tenantid") or "-"),
        run_id=str(envelope.get("run_id") or envelope.get("runid") or "-"),
        event_id=str(envelope.get("id") or event.get("id") or "-"),
    )


def sent_at(message: QueuedMessage) -> str:
    stamp = message.attributes.get("SentTimestamp")
    if not stamp:
        return "-"
    at = datetime.fromtimestamp(int(stamp) / 1000, tz=UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def string_attribute(message: QueuedMessage, name: str) -> str | None:
    value = message.message_attributes.get(name)
    if isinstance(value, dict) and "StringValue" in value:
        return str(value["StringValue"])
    return None


def as_json(message: QueuedMessage, queue: str, **extra: Any) -> dict[str, Any]:
    """The whole message for ``show``: the body parsed when it is JSON."""
    parsed = parse(message.body)
    return {
        "queue": queue,
        "message_id": message.message_id,
        "attributes": dict(message.attributes),
        "message_attributes": {
            name: value.get("StringValue", value) if isinstance(value, dict) else value
            for name, value in message.message_attributes.items()
        },
        **extra,
        "body": parsed if parsed is not None else message.body,
    }
