"""The quarantine queue: malformed input waits there, with its reason, for repair or a person."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from intentbus.ports import Clock

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# SQS takes 256 KiB a message (the queue's default may be larger; this is the floor). A body that
# does not fit beside the reason is cut, and its size and sha256 kept, so it can still be traced.
MAX_MESSAGE_BYTES = 256 * 1024


class SqsQuarantine:
    def __init__(self, queue_url: str, client: SQSClient, clock: Clock) -> None:
        self._queue_url = queue_url
        self._client = client
        self._clock = clock

    def put(self, *, stage: str, reason: str, field: str | None, body: str, message_id: str | None) -> None:
        raw = body.encode()
        record: dict[str, object] = {
            "stage": stage,
            "reason": reason[:4096],
            "field": field,
            "source_message_id": message_id,
            "quarantined_at": self._clock.now().isoformat(),
            "body_sha256": hashlib.sha256(raw).hexdigest(),
            "body_bytes": len(raw),
            "body": body,
            "body_truncated": False,
        }
        self._client.send_message(
            QueueUrl=self._queue_url,
            MessageBody=_fitted(record, raw),
            MessageAttributes={
                "stage": {"DataType": "String", "StringValue": stage},
                "reason": {"DataType": "String", "StringValue": reason[:256] or "unspecified"},
            },
        )


def _fitted(record: dict[str, object], raw: bytes) -> str:
    """The record as JSON within MAX_MESSAGE_BYTES, cutting the body as little as needed."""
    message = json.dumps(record, ensure_ascii=False)
    keep = len(raw)
    while len(message.encode()) > MAX_MESSAGE_BYTES:
        # JSON escaping can grow a byte up to six; shrink by the excess until it fits.
        keep -= max(1, (len(message.encode()) - MAX_MESSAGE_BYTES) // 2 + 1)
        record = {**record, "body": raw[: max(keep, 0)].decode(errors="ignore"), "body_truncated": True}
        message = json.dumps(record, ensure_ascii=False)
    return message
