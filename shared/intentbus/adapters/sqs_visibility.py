"""The stage handler's port to SQS visibility: bring a received message back after a wait."""

from __future__ import annotations

from typing import Any


def queue_url(queue_arn: str) -> str:
    """The queue's URL from its ARN (``arn:aws:sqs:REGION:ACCOUNT:NAME``), as SQS names it; no call."""
    parts = queue_arn.split(":")
    if len(parts) != 6 or parts[2] != "sqs":
        raise ValueError(f"not an SQS queue ARN: {queue_arn!r}")
    region, account, name = parts[3], parts[4], parts[5]
    suffix = "amazonaws.com.cn" if parts[1] == "aws-cn" else "amazonaws.com"
    return f"https://sqs.{region}.{suffix}/{account}/{name}"


class SqsVisibility:
    def __init__(self, sqs: Any) -> None:
        self._sqs = sqs

    def delay(self, queue_arn: str, receipt_handle: str, seconds: int) -> None:
        self._sqs.change_message_visibility(
            QueueUrl=queue_url(queue_arn), ReceiptHandle=receipt_handle, VisibilityTimeout=seconds
        )
