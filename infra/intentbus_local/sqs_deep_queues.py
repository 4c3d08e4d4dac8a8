"""moto's SQS on a standard queue at a cost that does not grow with the queue's depth.

Found on moto 5.2.6 (``moto/sqs/models.py``), with sqs_hot_paths installed, each send, receive,
delete and count still walked every message a queue holds: ``SQSBackend.send_message`` builds
``queue.attributes`` (counting every message) to read ``ContentBasedDeduplication``;
``receive_message`` lists every visible message (``Queue.messages``) before handing out the first
ten; ``Queue.delete_message`` compares the handle with every message's; the local cloud's idle check
and depth samples count the queue. At 8,000 queued messages a send ran 48,169 Python lines and a batch
delete of ten 240,100.

Most of a deep queue's messages were never received nor delayed: visible whatever the clock says. For
each standard queue this keeps the others, "touched" (received at least once, or delayed): the receive
adds what it hands out, the queue's ``add_message`` what comes in delayed or from a redrive, the delete
and the redrive take out what leaves. The counts are then the untouched messages plus a pass over the
touched ones (in flight, failed, delayed: few). The set is kept with the list object it describes;
when moto puts a new list in place (a purge) it is built again from the list. A receive walks the
queue from its head and stops at the last message it hands out, and a receipt handle is found through
an index from handle to message that the receive fills (checked against the message before it is
trusted; on a miss the queue is searched as moto searches it). A FIFO queue (the local cloud has none)
takes moto's own code throughout. The test (tests/integration/test_sqs_deep_queues.py) runs both on
generated traffic and compares what they answer and leave behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.sqs.models.Queue.add_message": "f27c9231c1f20433",
        "moto.sqs.models.SQSBackend.receive_message": "065f3e5e7d214408",
    },
)

_HANDLES = "_intentbus_handles"
"""The queue's attribute holding receipt handle -> the message given it (filled by the receive)."""
_TOUCHED = "_intentbus_touched"
"""The queue's attribute holding (the ``_messages`` list described, its touched messages)."""


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.sqs.models import Queue, SQSBackend

    PINS.replace(Queue, "add_message", _add_message)
    PINS.replace(SQSBackend, "receive_message", _receive_message)


def applies_to(queue: Any) -> bool:
    """Whether the queue's touched messages are kept (a standard queue, this module installed)."""
    return not queue.fifo_queue and "Queue.add_message" in PINS.replaced


def counts(queue: Any) -> tuple[int, int, int]:
    """(visible and not delayed, delayed, not visible), as ``Queue.attributes`` counts them, for a queue
    ``applies_to``: every untouched message is visible; the touched ones are asked, one clock read."""
    from moto.sqs import models

    touched = _touched(queue)
    visible, delayed, in_flight = tally(touched, models.unix_time_millis())  # type: ignore[attr-defined]
    return visible + len(queue._messages) - len(touched), delayed, in_flight


def tally(messages: Iterable[Any], now: float) -> tuple[int, int, int]:
    """(visible and not delayed, delayed, not visible) of ``messages`` at ``now`` (epoch milliseconds)."""
    visible = delayed = in_flight = 0
    for message in messages:
        is_visible = now > message.visible_at
        is_delayed = now < message.delayed_until
        visible += is_visible and not is_delayed
        delayed += is_delayed
        in_flight += not is_visible
    return visible, delayed, in_flight


def removed(queue: Any, message: Any) -> None:
    """Takes a message being deleted out of the queue as moto's delete leaves it: a new list without it
    (a receive walking the old one goes on), its handles and its place among the touched forgotten."""
    kept = queue._messages.copy()
    kept.remove(message)
    forget(queue, message)
    if applies_to(queue):
        touched = _touched(queue)
        touched.pop(message, None)
        queue.__dict__[_TOUCHED] = (kept, touched)
    queue._messages = kept


def _untouched(message: Any) -> bool:
    """Never received nor delayed: visible, not delayed, in flight never, whatever the time."""
    return bool(message.receipt_handle is None and message.visible_at == 0 and message.delayed_until == 0)


def _touched(queue: Any) -> dict[Any, None]:
    """The queue's touched messages (an ordered set), built again when ``_messages`` is another list."""
    state = queue.__dict__.get(_TOUCHED)
    if state is None or state[0] is not queue._messages:
        state = (queue._messages, {m: None for m in queue._messages if not _untouched(m)})
        queue.__dict__[_TOUCHED] = state
    touched: dict[Any, None] = state[1]
    return touched


def _add_message(queue: Any, message: Any) -> None:
    """moto's, noting a message that comes in touched (delayed, or redriven after its receives)."""
    PINS.replaced["Queue.add_message"](queue, message)
    if applies_to(queue) and not _untouched(message):
        _touched(queue)[message] = None


def has_visible(queue: Any) -> bool:
    """``bool(queue.messages)``, stopping at the first visible message (where the pins hold)."""
    if not applies_to(queue):
        return bool(queue.messages)
    if len(queue._messages) > len(_touched(queue)):
        return True  # an untouched message is visible
    return next(_visible(queue), None) is not None


def _visible(queue: Any) -> Iterator[Any]:
    """``Queue.messages`` (visible, not delayed, in queue order) as they are reached, one clock read."""
    from moto.sqs import models

    now = models.unix_time_millis()  # type: ignore[attr-defined]
    return (m for m in queue._messages if now > m.visible_at and not now < m.delayed_until)


def _moto_sqs_models() -> Any:
    """``moto.sqs.models``, whose names (``random``, ``deepcopy``, ...) the copies use as moto does."""
    from moto.sqs import models

    return models


def _receive_message(  # noqa: PLR0912, PLR0917 - moto's signature and loop, kept as they are
    backend: Any,
    queue_name: str,
    count: int,
    wait_seconds_timeout: int,
    visibility_timeout: int,
    message_attribute_names: list[str] | None = None,
) -> list[Any]:
    """moto's on a standard queue (no message groups), walking the queue only as far as it hands out."""
    models = _moto_sqs_models()
    queue = backend.get_queue(queue_name)
    if queue.fifo_queue:
        return PINS.moto_original("SQSBackend.receive_message")(  # type: ignore[no-any-return]
            backend, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names
        )
    if message_attribute_names is None:
        message_attribute_names = []
    handles: dict[str, Any] = queue.__dict__.setdefault(_HANDLES, {})
    result: list[Any] = []
    previous_result_count = 0
    polling_end = models.unix_time() + wait_seconds_timeout
    while True:
        if result or (wait_seconds_timeout and models.unix_time() > polling_end):
            break
        messages_to_dlq: list[Any] = []
        for message in _visible(queue):
            if not message.visible:
                continue
            if message in queue.pending_messages:
                queue.pending_messages.remove(message)  # visible again: the consumer timed out
            if (
                queue.dead_letter_queue is not None
                and queue.redrive_policy
                and message.approximate_receive_count >= queue.redrive_policy["maxReceiveCount"]
            ):
                messages_to_dlq.append(message)
                continue
            queue.pending_messages.add(message)
            message.mark_received(visibility_timeout=visibility_timeout)
            handles[message.receipt_handle] = message
            _touched(queue)[message] = None
            message_copy = models.deepcopy(message)
            models._filter_message_attributes(message_copy, message_attribute_names)
            if not backend.is_message_valid_based_on_retention_period(queue_name, message):
                break
            result.append(message_copy)
            if len(result) >= count:
                break
        for message in messages_to_dlq:
            forget(queue, message)
            queue._messages.remove(message)
            _touched(queue).pop(message, None)
            queue.dead_letter_queue.add_message(message)
        if previous_result_count == len(result):
            if wait_seconds_timeout == 0:
                break
            queue.wait_for_messages(1)
            continue
        previous_result_count = len(result)
    return result


def holder(queue: Any, receipt_handle: str) -> Any | None:
    """The queue's first message that ever had ``receipt_handle`` (``Message.had_receipt_handle``)."""
    message = queue.__dict__.get(_HANDLES, {}).get(receipt_handle)
    if message is not None and _had(message, receipt_handle) and message in queue._messages:
        return message  # a handle is given to one message only, so no other message had it
    return next((m for m in queue._messages if _had(m, receipt_handle)), None)


def _had(message: Any, receipt_handle: str) -> bool:
    return bool(message.receipt_handle == receipt_handle or receipt_handle in message._old_receipt_handles)


def forget(queue: Any, message: Any) -> None:
    """Drops a message leaving the queue from its handle index."""
    handles = queue.__dict__.get(_HANDLES, {})
    for handle in message.all_receipt_handles:
        handles.pop(handle, None)
