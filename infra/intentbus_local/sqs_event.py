"""The event Lambda's SQS event-source mapping hands a function, built from ReceiveMessage output."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

# The system attributes Lambda passes through, in its order.
_RECORD_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "AWSTraceHeader",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "DeadLetterQueueSourceArn",
)

# An EventBridge event's top-level fields, in the order EventBridge writes them.
_EVENTBRIDGE_FIELDS = (
    "version",
    "id",
    "detail-type",
    "source",
    "account",
    "time",
    "region",
    "resources",
    "detail",
)


def lambda_sqs_event(
    messages: Sequence[Mapping[str, Any]], *, queue_arn: str, region: str, account_id: str
) -> dict[str, Any]:
    return {
        "Records": [
            sqs_record(m, queue_arn=queue_arn, region=region, account_id=account_id) for m in messages
        ]
    }


def sqs_record(message: Mapping[str, Any], *, queue_arn: str, region: str, account_id: str) -> dict[str, Any]:
    body = with_account(message["Body"], account_id)
    system: Mapping[str, str] = message.get("Attributes", {})
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": body,
        "attributes": {name: system[name] for name in _RECORD_ATTRIBUTES if name in system},
        "messageAttributes": {
            name: _message_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": hashlib.md5(body.encode("utf-8")).hexdigest()
        if body != message["Body"]
        else message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def with_account(body: str, account_id: str) -> str:
    """moto's EventBridge -> SQS delivery omits ``account``; AWS always sets it. Filled in here only."""
    try:
        event = json.loads(body)
    except ValueError:
        return body
    if not _is_eventbridge_event(event) or "account" in event:
        return body
    event["account"] = account_id
    ordered = {key: event[key] for key in _EVENTBRIDGE_FIELDS if key in event}
    ordered.update({key: value for key, value in event.items() if key not in ordered})
    return json.dumps(ordered)


def _is_eventbridge_event(event: Any) -> bool:
    return isinstance(event, dict) and {"id", "detail-type", "source", "detail"} <= event.keys()


def _message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    attribute: dict[str, Any] = {}
    if "StringValue" in value:
        attribute["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        attribute["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode("ascii")
    attribute["stringListValues"] = list(value.get("StringListValues", []))
    attribute["binaryListValues"] = [
        base64.b64encode(b).decode("ascii") for b in value.get("BinaryListValues", [])
    ]
    attribute["dataType"] = value["DataType"]
    return attribute
