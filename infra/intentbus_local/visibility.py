"""What handlers asked of SQS visibility, so the poller can honour it on the virtual clock.

moto keeps a ChangeMessageVisibility in real time: a message a handler delays by 60 s stays invisible
60 real seconds, while the local cloud's clock may jump hours. ``record_changes`` makes moto's SQS note
each single ChangeMessageVisibility (when, on the wall clock, and for how long) by receipt handle;
the poller takes the note of each message it delivered and schedules the message's return at that
moment plus the timeout in virtual time. The poller's own releases go through the batch call, which is
not noted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_PATCHED = "_intentbus_records_visibility"
_LOCK = threading.Lock()
_CHANGES: dict[str, Change] = {}
_BATCH = threading.local()


@dataclass(frozen=True)
class Change:
    at_wall: float
    """``time.time()`` when the handler made the change."""
    timeout_seconds: int


def record_changes() -> None:
    from moto.sqs.models import SQSBackend

    if getattr(SQSBackend.change_message_visibility, _PATCHED, False):
        return
    single: Callable[..., None] = SQSBackend.change_message_visibility
    batch: Callable[..., Any] = SQSBackend.change_message_visibility_batch

    def change_noted(self: Any, queue_name: str, receipt_handle: str, visibility_timeout: int) -> None:
        single(self, queue_name, receipt_handle, visibility_timeout)
        if not getattr(_BATCH, "active", False):
            with _LOCK:
                _CHANGES[receipt_handle] = Change(time.time(), int(visibility_timeout))

    def batch_unnoted(self: Any, queue_name: str, entries: list[dict[str, Any]]) -> Any:
        _BATCH.active = True
        try:
            return batch(self, queue_name, entries)
        finally:
            _BATCH.active = False

    setattr(change_noted, _PATCHED, True)
    SQSBackend.change_message_visibility = change_noted  # type: ignore[method-assign]
    SQSBackend.change_message_visibility_batch = batch_unnoted  # type: ignore[method-assign]


def take(receipt_handle: str) -> Change | None:
    """The latest change a handler made to this received message, forgotten once taken."""
    with _LOCK:
        return _CHANGES.pop(receipt_handle, None)
