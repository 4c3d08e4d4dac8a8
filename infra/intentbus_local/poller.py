"""Plays Lambda's SQS event-source mapping: receive a batch, invoke, delete what succeeded.

Redrive to a DLQ is moto's own: on ReceiveMessage it moves a visible message whose receive count has
reached the queue's maxReceiveCount (as SQS does). What moto cannot know is virtual time: a failed
message stays invisible for the queue's VisibilityTimeout in *real* time. The poller records, per
failed delivery, when it becomes visible again in virtual time; ``release_due`` makes those messages
visible (ChangeMessageVisibility 0) once the local clock has reached that moment. A handler that changes
a message's visibility itself is not seen here: the poller assumes the queue's timeout.

Batches are whatever is receivable when the poller looks (up to BatchSize): it does not wait out
MaximumBatchingWindowInSeconds, and it runs one batch per mapping at a time (no concurrency scaling).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from intentbus_local.clock import LocalClock
from intentbus_local.lambda_runtime import Invocation, LambdaRuntime
from intentbus_local.sqs_event import lambda_sqs_event
from intentbus_local.topology import MappingInfo

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

SQS_MAX_RECEIVE = 10


class BatchResponseError(RuntimeError):
    """The response Lambda would reject, failing the whole batch."""


@dataclass(frozen=True)
class BatchResult:
    mapping: MappingInfo
    invocation: Invocation
    succeeded: tuple[str, ...]
    failed: tuple[str, ...]
    response_error: BatchResponseError | None = None


@dataclass(frozen=True)
class _Pending:
    queue_url: str
    receipt_handle: str
    visible_at: float


class Poller:
    def __init__(
        self,
        sqs: SQSClient,
        runtime: LambdaRuntime,
        clock: LocalClock,
        *,
        region: str,
        account_id: str,
    ) -> None:
        self._sqs = sqs
        self._runtime = runtime
        self._clock = clock
        self._region = region
        self._account_id = account_id
        self._pending: dict[tuple[str, str], _Pending] = {}

    def poll(self, mapping: MappingInfo) -> BatchResult | None:
        """One batch through the mapping's function; None when nothing was receivable."""
        received_at = self._clock.now()
        messages = self.receive_batch(mapping)
        if not messages:
            return None
        for message in messages:
            self._pending.pop((mapping.queue.url, message["MessageId"]), None)
        event = lambda_sqs_event(
            messages, queue_arn=mapping.queue.arn, region=self._region, account_id=self._account_id
        )
        invocation = self._runtime.invoke(mapping.function_logical_id, event)
        ids = [m["MessageId"] for m in messages]
        failed_ids, response_error = self._failed_ids(mapping, invocation, ids)
        by_id = {m["MessageId"]: m for m in messages}
        self._delete(mapping.queue.url, [by_id[i]["ReceiptHandle"] for i in ids if i not in failed_ids])
        for message_id in failed_ids:
            self._pending[(mapping.queue.url, message_id)] = _Pending(
                queue_url=mapping.queue.url,
                receipt_handle=by_id[message_id]["ReceiptHandle"],
                visible_at=received_at + mapping.visibility_timeout,
            )
        return BatchResult(
            mapping=mapping,
            invocation=invocation,
            succeeded=tuple(i for i in ids if i not in failed_ids),
            failed=tuple(i for i in ids if i in failed_ids),
            response_error=response_error,
        )

    def receive_batch(self, mapping: MappingInfo) -> list[dict[str, Any]]:
        """Up to the mapping's batch size; SQS caps one receive at 10, so receive until full or empty."""
        messages: list[dict[str, Any]] = []
        while len(messages) < mapping.batch_size:
            response = self._sqs.receive_message(
                QueueUrl=mapping.queue.url,
                MaxNumberOfMessages=min(SQS_MAX_RECEIVE, mapping.batch_size - len(messages)),
                WaitTimeSeconds=0,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            received = response.get("Messages", [])
            if not received:
                break
            messages.extend(dict(m) for m in received)
        return messages

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def next_visible_at(self) -> float | None:
        return min((p.visible_at for p in self._pending.values()), default=None)

    def release_due(self) -> int:
        """Makes every failed message whose virtual visibility timeout has lapsed visible now."""
        now = self._clock.now()
        due = [key for key, pending in self._pending.items() if pending.visible_at <= now]
        by_queue: dict[str, list[str]] = {}
        for key in due:
            pending = self._pending.pop(key)
            by_queue.setdefault(pending.queue_url, []).append(pending.receipt_handle)
        for queue_url, handles in by_queue.items():
            for start in range(0, len(handles), SQS_MAX_RECEIVE):
                chunk = handles[start : start + SQS_MAX_RECEIVE]
                # Entries that fail are messages no longer in flight (deleted, or moved): nothing to do.
                self._sqs.change_message_visibility_batch(
                    QueueUrl=queue_url,
                    Entries=[
                        {"Id": str(n), "ReceiptHandle": h, "VisibilityTimeout": 0}
                        for n, h in enumerate(chunk)
                    ],
                )
        return len(due)

    def _failed_ids(
        self, mapping: MappingInfo, invocation: Invocation, ids: Sequence[str]
    ) -> tuple[set[str], BatchResponseError | None]:
        if invocation.error is not None:
            return set(ids), None
        if not mapping.report_batch_item_failures:
            return set(), None
        try:
            return _reported_failures(invocation.response, ids), None
        except BatchResponseError as error:
            return set(ids), error

    def _delete(self, queue_url: str, receipt_handles: Sequence[str]) -> None:
        for start in range(0, len(receipt_handles), SQS_MAX_RECEIVE):
            chunk = receipt_handles[start : start + SQS_MAX_RECEIVE]
            response = self._sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[{"Id": str(n), "ReceiptHandle": h} for n, h in enumerate(chunk)],
            )
            if response.get("Failed"):
                raise RuntimeError(
                    f"could not delete processed messages from {queue_url}: {response['Failed']}"
                )


def _reported_failures(response: Any, ids: Sequence[str]) -> set[str]:
    """Lambda's rules: a null/empty response or list means success; a malformed one fails the batch."""
    if response is None:
        return set()
    if not isinstance(response, Mapping):
        raise BatchResponseError(f"the response is not a JSON object: {response!r}")
    failures = response.get("batchItemFailures")
    if not failures:
        return set()
    if not isinstance(failures, list):
        raise BatchResponseError(f"batchItemFailures is not a list: {failures!r}")
    known = set(ids)
    failed: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, Mapping) else None
        if not isinstance(identifier, str) or identifier not in known:
            raise BatchResponseError(f"batchItemFailures names no message of this batch: {failure!r}")
        failed.add(identifier)
    return failed
