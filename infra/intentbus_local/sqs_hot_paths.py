"""moto's SQS made to cost in proportion to the work asked of it, not to the queue's depth.

On moto 5.2.5 (``moto/sqs/models.py``) every message a queue holds is looked at, with two clock reads
each, whenever a message is sent or received: ``send_message`` reads ``queue.attributes`` (which counts
the visible, delayed and in-flight messages) to learn whether the queue deduplicates by content; each
message ``receive_message`` hands out is checked against the retention period through
``get_queue_attributes``, which builds ``queue.attributes`` several times; and ``Queue.messages`` and
the three counts read the clock once per message (``Message.visible``/``delayed`` ->
``unix_time_millis`` -> ``utcnow`` and ``utcfromtimestamp(0)``). ``Queue.delete_message`` walks the
queue twice, building a new list of every message's receipt handles at each step
(``Message.had_receipt_handle``): a fifth of a 10,000-input run. A local run spent over a third of its
time there, and the more inputs were queued the slower each message went. The delete here finds its
message through sqs_deep_queues' index of receipt handles, and on a standard queue the counts are
sqs_deep_queues' (what was never received nor delayed is visible), which makes a send, a receive, a
delete and a count there independent of the queue's depth.

Each replacement answers exactly what moto's own code answers, and the test that pins it
(tests/integration/test_sqs_hot_paths.py) fails when moto's replaced code changes, so a replacement is
looked at again rather than kept past the code it copies. UPSTREAM-sqs.md is the note offering these
changes to moto.
"""

from __future__ import annotations

from typing import Any

from intentbus_local import sqs_deep_queues
from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.5",
    sources={
        "moto.sqs.models.Queue.messages": "03a531dbcbcf9aee",
        "moto.sqs.models.Queue.approximate_number_of_messages_delayed": "c3c1dadb0c42ed5f",
        "moto.sqs.models.Queue.approximate_number_of_messages_not_visible": "5dbecc4dda174358",
        "moto.sqs.models.Queue.attributes": "40cb990b121628d5",
        "moto.sqs.models.SQSBackend.is_message_valid_based_on_retention_period": "cca23b94a5f3af9d",
        "moto.sqs.models.Queue.delete_message": "fa6fd5b9bd2cafb4",
        "moto.sqs.models.Message.had_receipt_handle": "31a347382a7315b7",
        "moto.sqs.models.Message.all_receipt_handles": "ed3dd73cb69b4911",
    },
)


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.sqs.models import Queue, SQSBackend

    PINS.replace(Queue, "messages", property(_visible_messages))
    PINS.replace(Queue, "approximate_number_of_messages_delayed", property(_delayed_count))
    PINS.replace(Queue, "approximate_number_of_messages_not_visible", property(_in_flight_count))
    PINS.replace(Queue, "attributes", property(_attributes))
    PINS.replace(SQSBackend, "is_message_valid_based_on_retention_period", _within_retention)
    PINS.replace(Queue, "delete_message", _delete_message)
    sqs_deep_queues.apply()


def _now_millis() -> float:
    from moto.core.utils import unix_time_millis

    return unix_time_millis()


def _visible_messages(queue: Any) -> list[Any]:
    now = _now_millis()
    return [m for m in queue._messages if now > m.visible_at and not now < m.delayed_until]


def _delayed_count(queue: Any) -> int:
    if sqs_deep_queues.applies_to(queue):
        return sqs_deep_queues.counts(queue)[1]
    now = _now_millis()
    return sum(1 for m in queue._messages if now < m.delayed_until)


def _in_flight_count(queue: Any) -> int:
    if sqs_deep_queues.applies_to(queue):
        return sqs_deep_queues.counts(queue)[2]
    now = _now_millis()
    return sum(1 for m in queue._messages if not now > m.visible_at)


_COUNTS = {
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesDelayed",
    "ApproximateNumberOfMessagesNotVisible",
}


def _attributes(queue: Any) -> dict[str, Any]:
    """moto's ``Queue.attributes``, the three message counts taken in one pass with one clock read."""
    import json

    from moto.core.utils import camelcase_to_underscores

    visible, delayed, in_flight = _counts(queue)
    result: dict[str, Any] = {
        "ApproximateNumberOfMessages": visible,
        "ApproximateNumberOfMessagesDelayed": delayed,
        "ApproximateNumberOfMessagesNotVisible": in_flight,
    }
    names = [name for name in queue.BASE_ATTRIBUTES if name not in _COUNTS]
    if queue.fifo_queue:
        names += queue.FIFO_ATTRIBUTES
    if queue.kms_master_key_id:
        names += queue.KMS_ATTRIBUTES
    for name in names:
        result[name] = getattr(queue, camelcase_to_underscores(name))
    if queue.policy:
        result["Policy"] = queue.policy
    if queue.redrive_policy:
        result["RedrivePolicy"] = json.dumps(queue.redrive_policy)
    return {key: str(value).lower() if isinstance(value, bool) else value for key, value in result.items()}


def _counts(queue: Any) -> tuple[int, int, int]:
    """(visible and not delayed, delayed, not visible) in one pass with one clock read."""
    if sqs_deep_queues.applies_to(queue):
        return sqs_deep_queues.counts(queue)
    return sqs_deep_queues.tally(queue._messages, _now_millis())


def _within_retention(backend: Any, queue_name: str, message: Any) -> bool:
    from moto.core.utils import unix_time

    retention_period = backend.get_queue(queue_name).message_retention_period
    return bool(retention_period + message.sent_timestamp / 1000 > unix_time())


def _delete_message(queue: Any, receipt_handle: str) -> None:
    """moto's ``Queue.delete_message``, the message found by its handle (``sqs_deep_queues.holder``)."""
    from moto.sqs.exceptions import ReceiptHandleIsInvalid

    if receipt_handle in queue.deleted_messages:
        return  # already deleted: moto lets it be deleted again
    message = sqs_deep_queues.holder(queue, receipt_handle)
    if message is None:
        raise ReceiptHandleIsInvalid()
    queue.pending_messages.discard(message)
    queue.deleted_messages.update(message.all_receipt_handles)
    sqs_deep_queues.removed(queue, message)
