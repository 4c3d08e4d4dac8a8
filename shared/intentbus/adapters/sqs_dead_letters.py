"""Reads a DLQ without deleting: each message is hidden briefly, so one sweep sees it once, then stays."""

from __future__ import annotations

from typing import Any

from intentbus.dead_letters import DeadLetter

PEEK_VISIBILITY_SECONDS = 30
"""Long enough for one sweep to page through a queue; the messages are back soon after, to redrive."""
MAX_PER_SWEEP = 500


class SqsDeadLetters:
    def __init__(self, sqs: Any, *, limit: int = MAX_PER_SWEEP) -> None:
        self._sqs = sqs
        self._limit = limit

    def peek(self, queue_url: str) -> list[DeadLetter]:
        seen: dict[str, DeadLetter] = {}
        while len(seen) < self._limit:
            response = self._sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
                VisibilityTimeout=PEEK_VISIBILITY_SECONDS,
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
            )
            messages = response.get("Messages", [])
            fresh = [m for m in messages if m["MessageId"] not in seen]
            if not fresh:
                break
            for message in fresh:
                # Each receive here counts too: what the stage received is the count less our own peeks.
                seen[message["MessageId"]] = DeadLetter(
                    message_id=message["MessageId"],
                    body=message.get("Body", ""),
                    receives=int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1")),
                )
        return list(seen.values())
