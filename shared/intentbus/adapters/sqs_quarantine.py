"""The quarantine queue: malformed input waits there, with its reason, for repair or a person."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from intentbus.ports import Clock

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# SQS takes 256 KiB a message; the wrapper needs room, so a body near the limit is cut and fingerprinted.
MAX_KEPT_BODY_BYTES = 200 * 1024


class SqsQuarantine:
    def __init__(self, queue_url: str, client: SQSClient, clock: Clock) -> None:
        self._queue_url = queue_url
        self._client = client
        self._clock = clock

    def put(self, *, stage: str, reason: str, field: str | None, body: str, message_id: str | None) -> None:
        raw = body.encode()
        record = {
            "stage": stage,
            "reason": reason,
            "field": field,
            "source_message_id": message_id,
            "quarantined_at": self._clock.now().isoformat(),
            "body_sha256": hashlib.sha256(raw).hexdigest(),
            "body_bytes": len(raw),
            "body": raw[:MAX_KEPT_BODY_BYTES].decode(errors="replace"),
            "body_truncated": len(raw) > MAX_KEPT_BODY_BYTES,
        }
        self._client.send_message(
            QueueUrl=self._queue_url,
            MessageBody=json.dumps(record),
            MessageAttributes={
                "stage": {"DataType": "String", "StringValue": stage},
                "reason": {"DataType": "String", "StringValue": reason[:256] or "unspecified"},
            },
        )
