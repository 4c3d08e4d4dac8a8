"""The quarantine queue: malformed input waits there, with its reason, for repair or a person.

A decision the agent could not make valid also carries the model's output, in its own field
``raw_output`` (with ``raw_output_bytes`` and ``raw_output_sha256``): the one place it is kept, since the
reason is logged and traced. The queue is encrypted (``SqsManagedSseEnabled`` in template.yaml), and
``intentbus quarantine show ID --raw-output`` is what shows the field to a person.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from intentbus.ports import Clock

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# SQS takes 256 KiB a message (the queue's default may be larger; this is the floor). A body or raw
# output that does not fit beside the reason is cut, the raw output first (the body is what a redrive
# needs), and its size and sha256 kept, so it can still be traced.
MAX_MESSAGE_BYTES = 256 * 1024
CUT_FIRST = ("raw_output", "body")


class SqsQuarantine:
    def __init__(self, queue_url: str, client: SQSClient, clock: Clock) -> None:
        self._queue_url = queue_url
        self._client = client
        self._clock = clock

    def put(
        self,
        *,
        stage: str,
        reason: str,
        field: str | None,
        body: str,
        message_id: str | None,
        raw_output: str | None = None,
    ) -> None:
        record: dict[str, object] = {
            "stage": stage,
            "reason": reason[:4096],
            "field": field,
            "source_message_id": message_id,
            "quarantined_at": self._clock.now().isoformat(),
            **_kept("body", body),
        }
        if raw_output is not None:
            record |= _kept("raw_output", raw_output)
        self._client.send_message(
            QueueUrl=self._queue_url,
            MessageBody=_fitted(record),
            MessageAttributes={
                "stage": {"DataType": "String", "StringValue": stage},
                "reason": {"DataType": "String", "StringValue": reason[:256] or "unspecified"},
            },
        )


def _kept(name: str, text: str) -> dict[str, object]:
    raw = text.encode()
    return {
        f"{name}_sha256": hashlib.sha256(raw).hexdigest(),
        f"{name}_bytes": len(raw),
        name: text,
        f"{name}_truncated": False,
    }


def _fitted(record: dict[str, object]) -> str:
    """The record as JSON within MAX_MESSAGE_BYTES, cutting its texts as little as needed."""
    message = json.dumps(record, ensure_ascii=False)
    for name in CUT_FIRST:
        text = record.get(name)
        if not isinstance(text, str):
            continue
        raw = text.encode()
        keep = len(raw)
        while len(message.encode()) > MAX_MESSAGE_BYTES and keep > 0:
            # JSON escaping can grow a byte up to six; shrink by the excess until it fits.
            keep -= max(1, (len(message.encode()) - MAX_MESSAGE_BYTES) // 2 + 1)
            record = {**record, name: raw[: max(keep, 0)].decode(errors="ignore"), f"{name}_truncated": True}
            message = json.dumps(record, ensure_ascii=False)
    return message
