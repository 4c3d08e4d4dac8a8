"""The SQS bodies EventBridge rules deliver: for a producer's event and for a pipeline fact."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from intentbus.envelope import Envelope

ACCOUNT = "123456789012"
REGION = "us-east-1"
DEFAULT_SOURCE = "tests.example"
"""The source a test's events are sent as when they name none."""


def bus_body(envelope: Envelope, *, account: str = ACCOUNT) -> str:
    """The SQS body an EventBridge rule delivers for a published envelope."""
    return json.dumps(
        {
            "version": "0",
            "id": f"eb-{envelope.id}",
            "detail-type": envelope.type,
            "source": envelope.source,
            "account": account,
            "time": envelope.time.isoformat(),
            "region": REGION,
            "resources": [],
            "detail": envelope.to_json_dict(),
        }
    )


def producer_body(
    detail: Any,
    *,
    detail_type: str,
    source: str = DEFAULT_SOURCE,
    time: datetime | str = "2026-12-01T09:00:00Z",
    event_id: str = "eb-raw",
    account: str = ACCOUNT,
) -> str:
    """The SQS body for what a producer put on the ingress bus (``detail`` as it sent it, any shape)."""
    return json.dumps(
        {
            "version": "0",
            "id": event_id,
            "detail-type": detail_type,
            "source": source,
            "account": account,
            "time": time if isinstance(time, str) else time.isoformat(),
            "region": REGION,
            "resources": [],
            "detail": detail,
        }
    )


def put_events_entry(event: Mapping[str, Any], *, default_source: str = DEFAULT_SOURCE) -> dict[str, str]:
    """The PutEvents entry a producer sends for an envelope or a CloudEvent (its source and type)."""
    return {
        "Source": source_of(event, default_source),
        "DetailType": type_of(event),
        "Detail": json.dumps(dict(event)),
    }


def source_of(event: Mapping[str, Any], default_source: str = DEFAULT_SOURCE) -> str:
    source = event.get("source")
    return source if isinstance(source, str) and source else default_source


def type_of(event: Mapping[str, Any]) -> str:
    for key in ("type", "event_type"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    return "Unknown"  # validate quarantines it, naming the missing type
