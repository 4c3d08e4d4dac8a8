"""Plays Lambda's SQS event-source mapping: receive a batch, invoke, delete what succeeded.

Redrive to a DLQ is moto's own: on ReceiveMessage it moves a visible message whose receive count has
reached the queue's maxReceiveCount (as SQS does). What moto cannot know is virtual time: a failed
message stays invisible for the queue's VisibilityTimeout in *real* time. The poller records, per
failed delivery, when it becomes visible again in virtual time; ``release_due`` makes those messages
visible (ChangeMessageVisibility 0) once the local clock has reached that moment. A handler that sets a
failed message's visibility itself (ChangeMessageVisibility, as execute's retries do) is honoured: the
message returns that many virtual seconds after the change (see visibility.py); otherwise the queue's
VisibilityTimeout after the receive applies.

Batches are whatever is receivable when the poller looks (up to BatchSize): it does not wait out
MaximumBatchingWindowInSeconds, and it runs one batch per mapping at a time (no concurrency scaling).

Each record carries the message's ``AWSTraceHeader`` (received with every system attribute), which is
the ``TraceHeader`` its PutEvents entry had: moto's EventBridge is made to deliver it, as AWS does
(``tracing.carry_trace_headers``). The runtime starts the invocation's trace from the first record's.

``Poller.faults`` (None by default) is a test seam for delivery faults (see intentbus_local.faults): it
may split and reorder what one receive got, send extra copies, and let a batch's visibility timeout
lapse before its delete, so the same messages reach a second invocation first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from intentbus_local import tracing, visibility
from intentbus_local.clock import LocalClock
from intentbus_local.lambda_runtime import FunctionRuntime, Invocation
from intentbus_local.sqs_event import lambda_sqs_event
from intentbus_local.topology import MappingInfo

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

SQS_MAX_RECEIVE = 10
_STALE_RECEIPT = "ReceiptHandleIsInvalid"

Message = dict[str, Any]
"""One message as ReceiveMessage returns it."""
DeleteBatch = Callable[[str, list[dict[str, str]]], list[dict[str, Any]]]
"""(queue URL, DeleteMessageBatch's entries) -> its ``Failed`` entries."""
Receive = Callable[[str, int], list[Message] | None]
"""(queue URL, how many, 1 to 10) -> ReceiveMessage's ``Messages``, or None: make the request instead."""
MakeVisible = Callable[[str, list[dict[str, Any]]], bool]
"""(queue URL, ChangeMessageVisibilityBatch's entries) -> whether done (False: make the request)."""


def make_visible(
    sqs: SQSClient, queue_url: str, receipt_handles: Sequence[str], in_process: MakeVisible | None = None
) -> None:
    """Received messages visible again at once: ChangeMessageVisibilityBatch, ten at a time, each batch done
    by ``in_process`` where it can (None, or False from it: the request is made)."""
    for start in range(0, len(receipt_handles), SQS_MAX_RECEIVE):
        chunk = receipt_handles[start : start + SQS_MAX_RECEIVE]
        entries = [{"Id": str(n), "ReceiptHandle": h, "VisibilityTimeout": 0} for n, h in enumerate(chunk)]
        # Entries that fail are messages no longer in flight (deleted, or moved): nothing to do.
        if in_process is None or not in_process(queue_url, entries):
            sqs.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries)  # type: ignore[arg-type]


class BatchResponseError(RuntimeError):
    """The response Lambda would reject, failing the whole batch."""


@dataclass(frozen=True)
class BatchResult:
    mapping: MappingInfo
    invocation: Invocation
    succeeded: tuple[str, ...]
    failed: tuple[str, ...]
    response_error: BatchResponseError | None = None


class DeliveryFaults(Protocol):
    def batches(self, mapping: MappingInfo, messages: list[Message]) -> list[list[Message]]:
        """The batches to invoke, in order, for what one receive got: every message in exactly one."""
        ...

    def lapses(self, mapping: MappingInfo, invocation: Invocation) -> bool:
        """Whether the batch's visibility timeout lapses before the poller deletes it."""
        ...


@dataclass(frozen=True)
class Delivered:
    """One delivery of one message, as the poller saw it (``Poller.history``)."""

    queue_url: str
    message_id: str
    receive_count: int
    at: float
    """Virtual time of the receive."""
    failed: bool
    delay_seconds: int | None
    """The visibility the handler set on it (a retry's backoff), if it set one."""
    visible_at: float | None
    """Virtual time from which the message may be delivered again (failed, not lapsed)."""


@dataclass(frozen=True)
class _Pending:
    queue_url: str
    receipt_handle: str
    visible_at: float


class Poller:
    def __init__(
        self,
        sqs: SQSClient,
        runtime: FunctionRuntime,
        clock: LocalClock,
        *,
        region: str,
        account_id: str,
        receivable: Callable[[str], bool] | None = None,
        delete_batch: DeleteBatch | None = None,
        receive: Receive | None = None,
        make_visible: MakeVisible | None = None,
    ) -> None:
        """``receivable(queue name)``: whether a receive would get a message now (in process, moto's
        queue asked directly); a receive it says would come back empty is not made. None: always ask SQS.
        ``delete_batch``: deletes what a batch processed without a request (in process); None: a
        DeleteMessageBatch request. ``receive``: receives without a request (in process; None when it
        cannot, and then, as with None, a ReceiveMessage request). ``make_visible``: the same for the
        ChangeMessageVisibilityBatch that releases messages (whose answer the poller does not read)."""
        self._sqs = sqs
        self._receive = receive
        self._make_visible_in_process = make_visible
        self._receivable = receivable
        self._delete_batch = delete_batch
        self._runtime = runtime
        self._clock = clock
        self._region = region
        self._account_id = account_id
        self._pending: dict[tuple[str, str], _Pending] = {}
        self.faults: DeliveryFaults | None = None
        self.history: list[Delivered] | None = None
        """Set to a list to record every delivery in it (tests: the retry schedule's invariant)."""
        # EventBridge hands a PutEvents entry's TraceHeader to SQS as AWSTraceHeader; moto needs telling.
        tracing.carry_trace_headers()
        visibility.record_changes()

    def poll(self, mapping: MappingInfo) -> BatchResult | None:
        """One batch through the mapping's function; None when nothing was receivable."""
        results = self.deliveries(mapping)
        return results[0] if results else None

    def deliveries(self, mapping: MappingInfo) -> list[BatchResult]:
        """What one receive became: one batch, or under delivery faults possibly several invocations."""
        received_at = self._clock.now()
        messages = self.receive_batch(mapping)
        if not messages:
            return []
        for message in messages:
            self._pending.pop((mapping.queue.url, message["MessageId"]), None)
        batches = [messages] if self.faults is None else self.faults.batches(mapping, messages)
        results: list[BatchResult] = []
        for batch in batches:
            results.extend(self._deliver(mapping, batch, received_at))
        return results

    def _deliver(
        self, mapping: MappingInfo, messages: list[Message], received_at: float
    ) -> list[BatchResult]:
        event = lambda_sqs_event(
            messages, queue_arn=mapping.queue.arn, region=self._region, account_id=self._account_id
        )
        invocation = self._runtime.invoke(mapping.function_logical_id, event)
        ids = [m["MessageId"] for m in messages]
        by_id = {m["MessageId"]: m for m in messages}
        again: list[BatchResult] = []
        lapsed = self.faults is not None and self.faults.lapses(mapping, invocation)
        if lapsed:
            # The visibility timeout ran out before the delete: SQS hands the same messages (and whatever
            # else is visible) to another invocation, which runs before this one's delete. From then on
            # the later receive's handle governs them; this one's failures register nothing.
            self._make_visible(mapping.queue.url, [m["ReceiptHandle"] for m in messages])
            again = self.deliveries(mapping)
        failed_ids, response_error = self._failed_ids(mapping, invocation, ids)
        self._delete(
            mapping.queue.url,
            [by_id[i]["ReceiptHandle"] for i in ids if i not in failed_ids],
            stale_ok=lapsed,
        )
        changes = {i: visibility.take(by_id[i]["ReceiptHandle"]) for i in ids}
        visible: dict[str, float] = {}
        for message_id in failed_ids if not lapsed else ():
            change = changes[message_id]
            visible[message_id] = (
                received_at + mapping.visibility_timeout
                if change is None
                else change.at_wall + self._clock.offset_seconds + change.timeout_seconds
            )
            self._pending[(mapping.queue.url, message_id)] = _Pending(
                queue_url=mapping.queue.url,
                receipt_handle=by_id[message_id]["ReceiptHandle"],
                visible_at=visible[message_id],
            )
        if self.history is not None:
            self.history.extend(
                Delivered(
                    queue_url=mapping.queue.url,
                    message_id=i,
                    receive_count=int(by_id[i].get("Attributes", {}).get("ApproximateReceiveCount", 1)),
                    at=received_at,
                    failed=i in failed_ids,
                    delay_seconds=_timeout(changes[i]),
                    visible_at=visible.get(i),
                )
                for i in ids
            )
        result = BatchResult(
            mapping=mapping,
            invocation=invocation,
            succeeded=tuple(i for i in ids if i not in failed_ids),
            failed=tuple(i for i in ids if i in failed_ids),
            response_error=response_error,
        )
        return [result, *again]

    def receive_batch(self, mapping: MappingInfo) -> list[Message]:
        """Up to the mapping's batch size; SQS caps one receive at 10, so receive until full or empty."""
        messages: list[Message] = []
        while len(messages) < mapping.batch_size:
            if self._receivable is not None and not self._receivable(mapping.queue.name):
                break
            count = min(SQS_MAX_RECEIVE, mapping.batch_size - len(messages))
            received = None if self._receive is None else self._receive(mapping.queue.url, count)
            if received is None:
                response = self._sqs.receive_message(
                    QueueUrl=mapping.queue.url,
                    MaxNumberOfMessages=count,
                    WaitTimeSeconds=0,
                    MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
                received = cast(list[Message], response.get("Messages", []))
            if not received:
                break
            messages.extend(dict(m) for m in received)
        return messages

    def forget(self, queue_urls: set[str]) -> None:
        """Stops tracking failed deliveries of queues that are gone (a redeploy deleted them)."""
        for key in [key for key, pending in self._pending.items() if pending.queue_url in queue_urls]:
            del self._pending[key]

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
            self._make_visible(queue_url, handles)
        return len(due)

    def _make_visible(self, queue_url: str, receipt_handles: Sequence[str]) -> None:
        make_visible(self._sqs, queue_url, receipt_handles, self._make_visible_in_process)

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

    def _delete(self, queue_url: str, receipt_handles: Sequence[str], *, stale_ok: bool = False) -> None:
        """``stale_ok``: the messages were received again since, so a handle may no longer be valid."""
        for start in range(0, len(receipt_handles), SQS_MAX_RECEIVE):
            chunk = receipt_handles[start : start + SQS_MAX_RECEIVE]
            entries = [{"Id": str(n), "ReceiptHandle": h} for n, h in enumerate(chunk)]
            answered: Sequence[Mapping[str, Any]]
            if self._delete_batch is not None and len(set(chunk)) == len(chunk):
                answered = self._delete_batch(queue_url, entries)
            else:  # SQS refuses a batch naming one handle twice: let it say so
                response = self._sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)  # type: ignore[arg-type]
                answered = response.get("Failed", [])
            failed = [f for f in answered if not (stale_ok and f["Code"] == _STALE_RECEIPT)]
            if failed:
                raise RuntimeError(f"could not delete processed messages from {queue_url}: {failed}")


def _timeout(change: visibility.Change | None) -> int | None:
    return None if change is None else change.timeout_seconds


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
