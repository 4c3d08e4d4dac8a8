"""Moving messages from one SQS queue to another without losing any: DLQ redrive, quarantine resubmit.

Pure logic over a small port. Each batch is sent first and deleted from the source only once sent,
so an interruption never loses a message: one that dies between the two leaves a copy in both
queues, and the copy moved again later is a duplicate delivery, which the pipeline absorbs (every
stage dedups by event id, execute by idempotency key). Messages received but not moved (skipped,
failed to send, or only looked at in a dry run) are held invisible until the pass ends, so one pass
sees each message once, and then released; if the mover is killed, they come back by themselves
when their visibility timeout lapses.

Where SQS itself can move them (``StartMessageMoveTask``, a DLQ back to its source queues),
:func:`run_move_task` starts the task and follows its progress; it is the whole DLQ or nothing, so
a dry run, a count or a rewrite of each message uses :func:`move_messages`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

SQS_BATCH = 10
DEFAULT_VISIBILITY_SECONDS = 30
_ROUNDS_WITHOUT_NEWS = 3


@dataclass(frozen=True)
class QueuedMessage:
    message_id: str
    receipt_handle: str
    body: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    """System attributes (ApproximateReceiveCount, SentTimestamp, ...)."""
    message_attributes: Mapping[str, Any] = field(default_factory=dict)
    """As ReceiveMessage returns them: name -> {"DataType": ..., "StringValue": ...}."""


@dataclass(frozen=True)
class Outgoing:
    """What to send for one received message, and where."""

    queue_url: str
    body: str
    message_attributes: Mapping[str, Any] = field(default_factory=dict)


class QueuePort(Protocol):
    def receive(self, queue_url: str, *, max_messages: int, visibility_timeout: int) -> list[QueuedMessage]:
        """Up to ``max_messages`` (at most 10), hidden from others for ``visibility_timeout`` seconds."""
        ...

    def send_batch(self, queue_url: str, entries: Sequence[tuple[str, Outgoing]]) -> set[str]:
        """Sends (entry id, message) pairs, at most 10; returns the entry ids that were not sent."""
        ...

    def delete_batch(self, queue_url: str, entries: Sequence[tuple[str, str]]) -> set[str]:
        """Deletes (entry id, receipt handle) pairs, at most 10; returns the entry ids not deleted."""
        ...

    def release(self, queue_url: str, receipt_handles: Sequence[str]) -> None:
        """Makes received messages visible again at once (visibility timeout 0)."""
        ...


Plan = Callable[[QueuedMessage], Outgoing | None]
"""Where a message goes and as what; None leaves it where it is (skipped)."""


class Step(StrEnum):
    MOVED = "moved"
    WOULD_MOVE = "would_move"
    SKIPPED = "skipped"
    FAILED = "failed"
    SENT_NOT_DELETED = "sent_not_deleted"
    """Sent, but the delete failed: a copy stays in the source and will be moved again (a duplicate)."""


@dataclass(frozen=True)
class Progress:
    step: Step
    message: QueuedMessage
    outgoing: Outgoing | None
    moved: int
    """Messages moved (or, in a dry run, that would be) so far, this one included."""


@dataclass
class MoveReport:
    source_url: str
    dry_run: bool
    moved: int = 0
    skipped: int = 0
    failed: int = 0
    sent_not_deleted: int = 0
    moved_ids: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Nothing that was meant to move is left behind."""
        return self.failed == 0 and self.sent_not_deleted == 0


def move_messages(
    port: QueuePort,
    source_url: str,
    plan: Plan,
    *,
    dry_run: bool = False,
    max_messages: int | None = None,
    visibility_timeout: int = DEFAULT_VISIBILITY_SECONDS,
    on_progress: Callable[[Progress], None] | None = None,
) -> MoveReport:
    """One pass over ``source_url``: every message ``plan`` places is sent there, then deleted here.

    ``max_messages`` stops after that many moved. An exception (or KeyboardInterrupt) propagates after
    the held messages are released; what was moved is moved, and a second run moves the rest.
    """
    if max_messages is not None and max_messages < 0:
        raise ValueError("max_messages must be 0 or more")
    mover = _Mover(
        port, source_url, plan, dry_run=dry_run, visibility=visibility_timeout, on_progress=on_progress
    )
    try:
        mover.run(max_messages)
    finally:
        mover.release_held()
    return mover.report


class _Mover:
    def __init__(
        self,
        port: QueuePort,
        source_url: str,
        plan: Plan,
        *,
        dry_run: bool,
        visibility: int,
        on_progress: Callable[[Progress], None] | None,
    ) -> None:
        self._port = port
        self._source = source_url
        self._plan = plan
        self._dry_run = dry_run
        self._visibility = visibility
        self._on_progress = on_progress
        self._held: dict[str, str] = {}
        """Message id -> latest receipt handle of what is received but stays in the source."""
        self._in_flight: dict[str, str] = {}
        """The batch being sent and deleted: released too if that is interrupted, so a re-run moves it
        (again: a duplicate the pipeline absorbs) instead of waiting for its visibility timeout."""
        self._done: set[str] = set()
        self.report = MoveReport(source_url=source_url, dry_run=dry_run)

    def run(self, max_messages: int | None) -> None:
        rounds_without_news = 0
        while max_messages is None or self.report.moved < max_messages:
            wanted = SQS_BATCH if max_messages is None else min(SQS_BATCH, max_messages - self.report.moved)
            received = self._port.receive(
                self._source, max_messages=wanted, visibility_timeout=self._visibility
            )
            if not received:
                return
            fresh = self._fresh(received)
            if not fresh:
                rounds_without_news += 1
                if rounds_without_news >= _ROUNDS_WITHOUT_NEWS:
                    return  # only messages this pass has seen keep coming back
                continue
            rounds_without_news = 0
            self._handle(fresh)

    def _fresh(self, received: list[QueuedMessage]) -> list[QueuedMessage]:
        """New messages; a held one seen again keeps its new handle, a moved one seen again is deleted."""
        fresh: list[QueuedMessage] = []
        for message in received:
            if message.message_id in self._held:
                self._held[message.message_id] = message.receipt_handle
            elif message.message_id in self._done:
                # SQS delivered a copy of a message already sent and deleted (at-least-once): drop it.
                self._port.delete_batch(self._source, [("0", message.receipt_handle)])
            else:
                fresh.append(message)
        return fresh

    def _handle(self, messages: list[QueuedMessage]) -> None:
        planned: list[tuple[QueuedMessage, Outgoing]] = []
        for message in messages:
            outgoing = self._plan(message)
            if outgoing is None:
                self._hold(message)
                self.report.skipped += 1
                self._tell(Step.SKIPPED, message, None)
            else:
                planned.append((message, outgoing))
        if self._dry_run:
            for message, outgoing in planned:
                self._hold(message)
                self._count_moved(message)
                self._tell(Step.WOULD_MOVE, message, outgoing)
            return
        self._in_flight = {message.message_id: message.receipt_handle for message, _ in planned}
        unsent = self._send(planned)
        sent = [(m, o) for m, o in planned if m.message_id not in unsent]
        for message, outgoing in planned:
            if message.message_id in unsent:
                self._hold(message)
                self.report.failed += 1
                self._tell(Step.FAILED, message, outgoing)
        undeleted = self._delete([m for m, _ in sent])
        self._in_flight = {}
        for message, outgoing in sent:
            self._done.add(message.message_id)
            self._count_moved(message)
            if message.message_id in undeleted:
                self.report.sent_not_deleted += 1
                self._tell(Step.SENT_NOT_DELETED, message, outgoing)
            else:
                self._tell(Step.MOVED, message, outgoing)

    def _send(self, planned: list[tuple[QueuedMessage, Outgoing]]) -> set[str]:
        """Sends each destination's share in one batch; returns the message ids not sent."""
        by_queue: dict[str, list[tuple[str, Outgoing]]] = {}
        for message, outgoing in planned:
            by_queue.setdefault(outgoing.queue_url, []).append((message.message_id, outgoing))
        unsent: set[str] = set()
        for queue_url, entries in by_queue.items():
            ids = {str(n): message_id for n, (message_id, _) in enumerate(entries)}
            failed = self._port.send_batch(queue_url, [(str(n), out) for n, (_, out) in enumerate(entries)])
            unsent |= {ids[entry_id] for entry_id in failed}
        return unsent

    def _delete(self, messages: list[QueuedMessage]) -> set[str]:
        if not messages:
            return set()
        failed = self._port.delete_batch(
            self._source, [(str(n), m.receipt_handle) for n, m in enumerate(messages)]
        )
        return {messages[int(entry_id)].message_id for entry_id in failed}

    def _hold(self, message: QueuedMessage) -> None:
        self._held[message.message_id] = message.receipt_handle

    def _count_moved(self, message: QueuedMessage) -> None:
        self.report.moved += 1
        self.report.moved_ids.append(message.message_id)

    def _tell(self, step: Step, message: QueuedMessage, outgoing: Outgoing | None) -> None:
        if self._on_progress is not None:
            self._on_progress(Progress(step, message, outgoing, self.report.moved))

    def release_held(self) -> None:
        """Best effort: whatever is not released becomes visible when its visibility timeout lapses."""
        handles = [*self._held.values(), *self._in_flight.values()]
        self._held.clear()
        self._in_flight.clear()
        for start in range(0, len(handles), SQS_BATCH):
            with contextlib.suppress(Exception):  # one failed release must not keep the others hidden
                self._port.release(self._source, handles[start : start + SQS_BATCH])


def peek(
    port: QueuePort,
    queue_url: str,
    *,
    limit: int | None = None,
    visibility_timeout: int = DEFAULT_VISIBILITY_SECONDS,
) -> list[QueuedMessage]:
    """The queue's visible messages (up to ``limit``), left in the queue. SQS has no peek: each one is
    received, held for the pass and released, which adds one to its ApproximateReceiveCount (harmless
    on a DLQ or the quarantine queue; on a stage queue it counts towards maxReceiveCount)."""
    seen: dict[str, QueuedMessage] = {}
    handles: dict[str, str] = {}
    rounds_without_news = 0
    try:
        while limit is None or len(seen) < limit:
            wanted = SQS_BATCH if limit is None else min(SQS_BATCH, limit - len(seen))
            received = port.receive(queue_url, max_messages=wanted, visibility_timeout=visibility_timeout)
            if not received:
                break
            news = [message for message in received if message.message_id not in seen]
            for message in received:
                handles[message.message_id] = message.receipt_handle
                seen.setdefault(message.message_id, message)
            rounds_without_news = 0 if news else rounds_without_news + 1
            if rounds_without_news >= _ROUNDS_WITHOUT_NEWS:
                break
    finally:
        held = list(handles.values())
        for start in range(0, len(held), SQS_BATCH):
            with contextlib.suppress(Exception):
                port.release(queue_url, held[start : start + SQS_BATCH])
    return list(seen.values())


# ---------------------------------------------------------------------- SQS's own move task


class MoveTaskUnsupported(Exception):
    """This endpoint has no StartMessageMoveTask (moto, some emulators): move message by message."""


@dataclass(frozen=True)
class TaskStatus:
    status: str
    """RUNNING, COMPLETED, CANCELLING, CANCELLED or FAILED."""
    moved: int
    to_move: int | None
    failure_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("COMPLETED", "CANCELLED", "FAILED")


class MoveTaskPort(Protocol):
    def start_move_task(self, source_arn: str, destination_arn: str | None) -> str:
        """Starts SQS's move of every message; returns the task handle. Raises MoveTaskUnsupported."""
        ...

    def move_task_status(self, source_arn: str, task_handle: str) -> TaskStatus: ...


def run_move_task(
    port: MoveTaskPort,
    source_arn: str,
    destination_arn: str | None = None,
    *,
    wait: bool = True,
    poll_seconds: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    on_status: Callable[[TaskStatus], None] | None = None,
) -> TaskStatus:
    """Starts the move task (to the DLQ's source queues when ``destination_arn`` is None) and, with
    ``wait``, follows it until it finishes. An interrupted wait leaves the task running in SQS."""
    handle = port.start_move_task(source_arn, destination_arn)
    status = port.move_task_status(source_arn, handle)
    if on_status is not None:
        on_status(status)
    while wait and not status.finished:
        sleep(poll_seconds)
        status = port.move_task_status(source_arn, handle)
        if on_status is not None:
            on_status(status)
    return status
