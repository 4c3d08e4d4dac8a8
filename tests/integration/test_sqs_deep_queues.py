"""The local cloud's SQS send, receive and delete on deep queues: pinned to moto's code, answering what it
answers on generated traffic, and doing the same work at any depth."""

from __future__ import annotations

import contextlib
import functools
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from intentbus_local import hot_paths, sqs_deep_queues, sqs_hot_paths
from tests.bench.sqs_depth import lines_run

REGION = "us-east-1"
ACCOUNT = "123456789012"
MAX_RECEIVE_COUNT = 3


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert sqs_deep_queues.PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {sqs_deep_queues.PINS.found_on}): compare "
        "the replacement with moto's new code, then update its digest"
    )


@contextlib.contextmanager
def _moto_s_own() -> Iterator[None]:
    """moto's own receive, add, delete and counts in place of the local cloud's, for the duration."""
    from moto.sqs.models import Queue, SQSBackend

    def counted(name: str) -> property:
        return property(sqs_hot_paths.PINS.moto_original(name))

    swapped = [
        (SQSBackend, "receive_message", sqs_deep_queues.PINS.moto_original("SQSBackend.receive_message")),
        (Queue, "add_message", sqs_deep_queues.PINS.moto_original("Queue.add_message")),
        (Queue, "delete_message", sqs_hot_paths.PINS.moto_original("Queue.delete_message")),
        (Queue, "attributes", counted("Queue.attributes")),
        (Queue, "messages", counted("Queue.messages")),
        (
            Queue,
            "approximate_number_of_messages_delayed",
            counted("Queue.approximate_number_of_messages_delayed"),
        ),
        (
            Queue,
            "approximate_number_of_messages_not_visible",
            counted("Queue.approximate_number_of_messages_not_visible"),
        ),
    ]
    saved = [(owner, name, vars(owner)[name]) for owner, name, _ in swapped]
    for owner, name, original in swapped:
        setattr(owner, name, original)
    try:
        yield
    finally:
        for owner, name, replacement in saved:
            setattr(owner, name, replacement)


def _traffic(seed: int, steps: int, has_visible: Callable[[Any], bool]) -> list[Any]:
    """What a queue with a dead-letter queue answers to ``steps`` generated calls: sends (some delayed),
    receives (some leaving the message visible, so it is redriven), deletes and visibility changes by
    current, old, deleted and unknown handles, purges, messages past retention; after each, the counts."""
    rng = random.Random(seed)
    trace: list[Any] = []
    with mock_aws():
        from moto.sqs.models import sqs_backends

        sqs = boto3.client("sqs", region_name=REGION)
        dead = sqs.create_queue(QueueName="dead")["QueueUrl"]
        dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        url = sqs.create_queue(
            QueueName="main",
            Attributes={
                "VisibilityTimeout": "30",
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dead_arn, "maxReceiveCount": str(MAX_RECEIVE_COUNT)}
                ),
            },
        )["QueueUrl"]
        backend = sqs_backends[ACCOUNT][REGION]
        queue: Any = backend.get_queue("main")
        dlq: Any = backend.get_queue("dead")
        handles: list[str] = []
        for step in range(steps):
            roll = rng.random()
            if roll < 0.3:
                entries = [
                    {
                        "Id": str(n),
                        "MessageBody": f"m{step}.{n}",
                        "DelaySeconds": 60 if rng.random() < 0.1 else 0,
                    }
                    for n in range(rng.randint(1, 3))
                ]
                sqs.send_message_batch(QueueUrl=url, Entries=entries)  # type: ignore[arg-type]
                trace.append(("sent", len(entries)))
            elif roll < 0.6:
                received = sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=rng.randint(1, 10),
                    VisibilityTimeout=rng.choice([0, 0, 30]),
                    MessageSystemAttributeNames=["ApproximateReceiveCount"],
                ).get("Messages", [])
                handles.extend(m["ReceiptHandle"] for m in received)
                trace.append(
                    ("received", [(m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in received])
                )
            elif roll < 0.8:
                handle = rng.choice(handles) if handles and rng.random() < 0.9 else "not-a-handle"
                trace.append(
                    (
                        "delete",
                        _outcome(functools.partial(sqs.delete_message, QueueUrl=url, ReceiptHandle=handle)),
                    )
                )
            elif roll < 0.9 and handles:
                handle = rng.choice(handles)
                trace.append(
                    (
                        "visible again",
                        _outcome(
                            functools.partial(
                                sqs.change_message_visibility,
                                QueueUrl=url,
                                ReceiptHandle=handle,
                                VisibilityTimeout=0,
                            )
                        ),
                    )
                )
            elif roll < 0.93:
                queue.last_purged_at = None  # moto allows one purge a minute
                sqs.purge_queue(QueueUrl=url)
                trace.append(("purged", len(queue._messages)))
            elif queue._messages:
                aged = queue._messages[rng.randrange(len(queue._messages))]
                aged.sent_timestamp -= (int(queue.message_retention_period) + 1) * 1000
                trace.append(("aged", aged.body))
            counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
            trace.append(
                (
                    {k: v for k, v in counts.items() if k.startswith("ApproximateNumber")},
                    has_visible(queue),
                    queue.approximate_number_of_messages_delayed,
                    queue.approximate_number_of_messages_not_visible,
                    [m.body for m in queue.messages],
                    bool(queue.messages),
                    len(queue.pending_messages),
                    len(queue.deleted_messages),
                )
            )
        trace.append(([m.body for m in queue._messages], [m.body for m in dlq._messages]))
        trace.append([(m.body, m.approximate_receive_count) for m in dlq._messages])
    return trace


def _outcome(call: Callable[[], Any]) -> str:
    try:
        call()
    except Exception as error:  # the error moto answers is part of what is compared
        return type(error).__name__ + ":" + str(getattr(error, "response", {}).get("Error", {}).get("Code"))
    return "ok"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_traffic_gets_moto_s_own_answers(seed: int) -> None:
    hot_paths.apply()
    fast = _traffic(seed, 300, sqs_deep_queues.has_visible)
    with _moto_s_own():
        moto_s = _traffic(seed, 300, lambda queue: bool(queue.messages))
    assert fast == moto_s
    kinds = {entry[0] for entry in fast if isinstance(entry, tuple) and isinstance(entry[0], str)}
    assert kinds == {"sent", "received", "delete", "visible again", "purged", "aged"}
    assert fast[-1], "some messages were redriven to the dead-letter queue"
    assert any("ReceiptHandleIsInvalid" in entry[1] for entry in fast if entry[0] == "delete")


def _work_at(depth: int) -> tuple[int, int, int]:
    """Python lines run by a send, a receive of 10 and the delete of those 10, ``depth`` messages queued."""
    with mock_aws():
        from moto.sqs.models import sqs_backends

        backend = sqs_backends[ACCOUNT][REGION]
        backend.create_queue("deep")
        for number in range(depth):
            backend.send_message("deep", f"m{number}")
        send = lines_run(lambda: backend.send_message("deep", "one more"))
        received: list[Any] = []
        receive = lines_run(lambda: received.extend(backend.receive_message("deep", 10, 0, 30, ["All"])))
        entries = [{"Id": str(n), "ReceiptHandle": m.receipt_handle} for n, m in enumerate(received)]
        delete = lines_run(lambda: backend.delete_message_batch("deep", entries))
        assert [m.body for m in received] == [f"m{n}" for n in range(10)]
    return send, receive, delete


def test_a_send_a_receive_and_a_delete_do_the_same_work_at_any_depth() -> None:
    """On moto's own code a send at depth 2,000 ran 10,800 lines more than at 200, a batch delete 54,000."""
    hot_paths.apply()
    shallow, deep = _work_at(200), _work_at(2000)
    assert deep[0] == shallow[0]
    assert deep[2] == shallow[2]
    assert abs(deep[1] - shallow[1]) < shallow[1] // 20  # deepcopy of each message handed out varies a little
