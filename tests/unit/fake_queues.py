"""An in-memory SQS for intentbus_cli.queue_moves: visibility timeouts on a virtual clock, receive counts."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from intentbus_cli.queue_moves import MoveTaskUnsupported, Outgoing, QueuedMessage, TaskStatus


@dataclass
class _Stored:
    message_id: str
    body: str
    message_attributes: dict[str, Any]
    visible_at: float = 0.0
    receive_count: int = 0
    handle: str | None = None


@dataclass
class FakeQueues:
    now: float = 0.0
    queues: dict[str, list[_Stored]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    fail_send: Callable[[str, Outgoing], bool] = lambda queue_url, outgoing: False
    fail_delete: Callable[[str], bool] = lambda message_id: False
    crash: Callable[[str, int], None] = lambda operation, call_number: None
    """Called before each operation with its name and how many of that operation came before."""
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    # ------------------------------------------------------------------ setting up and looking

    def put(self, queue_url: str, body: str, **attributes: str) -> str:
        message_id = f"m{next(self._ids):04d}"
        self.queues.setdefault(queue_url, []).append(
            _Stored(
                message_id,
                body,
                {name: {"DataType": "String", "StringValue": value} for name, value in attributes.items()},
            )
        )
        return message_id

    def bodies(self, queue_url: str) -> list[str]:
        return [stored.body for stored in self.queues.get(queue_url, [])]

    def visible(self, queue_url: str) -> int:
        return sum(1 for stored in self.queues.get(queue_url, []) if stored.visible_at <= self.now)

    def attributes(self, queue_url: str) -> list[dict[str, Any]]:
        return [stored.message_attributes for stored in self.queues.get(queue_url, [])]

    def _call(self, operation: str) -> None:
        self.crash(operation, self.calls.count(operation))
        self.calls.append(operation)

    # ------------------------------------------------------------------ QueuePort

    def receive(self, queue_url: str, *, max_messages: int, visibility_timeout: int) -> list[QueuedMessage]:
        self._call("receive")
        received: list[QueuedMessage] = []
        for stored in self.queues.get(queue_url, []):
            if len(received) == max_messages:
                break
            if stored.visible_at > self.now:
                continue
            stored.visible_at = self.now + visibility_timeout
            stored.receive_count += 1
            stored.handle = f"{stored.message_id}/{stored.receive_count}"
            received.append(
                QueuedMessage(
                    message_id=stored.message_id,
                    receipt_handle=stored.handle,
                    body=stored.body,
                    attributes={"ApproximateReceiveCount": str(stored.receive_count)},
                    message_attributes=dict(stored.message_attributes),
                )
            )
        return received

    def send_batch(self, queue_url: str, entries: Sequence[tuple[str, Outgoing]]) -> set[str]:
        self._call("send")
        assert len(entries) <= 10
        failed: set[str] = set()
        for entry_id, outgoing in entries:
            if self.fail_send(queue_url, outgoing):
                failed.add(entry_id)
                continue
            message_id = f"m{next(self._ids):04d}"
            self.queues.setdefault(queue_url, []).append(
                _Stored(message_id, outgoing.body, dict(outgoing.message_attributes))
            )
        return failed

    def delete_batch(self, queue_url: str, entries: Sequence[tuple[str, str]]) -> set[str]:
        self._call("delete")
        assert len(entries) <= 10
        failed: set[str] = set()
        queue = self.queues.get(queue_url, [])
        for entry_id, handle in entries:
            stored = next((s for s in queue if s.handle == handle), None)
            if stored is None or self.fail_delete(stored.message_id):
                failed.add(entry_id)
                continue
            queue.remove(stored)
        return failed

    def release(self, queue_url: str, receipt_handles: Sequence[str]) -> None:
        self._call("release")
        for stored in self.queues.get(queue_url, []):
            if stored.handle in receipt_handles:
                stored.visible_at = self.now


@dataclass
class FakeMoveTasks:
    """SQS's move task: each status call moves ``per_poll`` more, up to ``total``."""

    total: int
    per_poll: int = 40
    supported: bool = True
    started: list[tuple[str, str | None]] = field(default_factory=list)
    _moved: int = 0

    def start_move_task(self, source_arn: str, destination_arn: str | None) -> str:
        if not self.supported:
            raise MoveTaskUnsupported("StartMessageMoveTask is not available here")
        self.started.append((source_arn, destination_arn))
        return "task-1"

    def move_task_status(self, source_arn: str, task_handle: str) -> TaskStatus:
        assert task_handle == "task-1"
        status = "COMPLETED" if self._moved >= self.total else "RUNNING"
        current = TaskStatus(status=status, moved=self._moved, to_move=self.total)
        self._moved = min(self.total, self._moved + self.per_poll)
        return current
