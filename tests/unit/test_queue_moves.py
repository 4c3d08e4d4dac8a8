"""The mover over an in-memory SQS: nothing lost when interrupted, a re-run moves the rest."""

from __future__ import annotations

import json

import pytest

from intentbus_cli.queue_moves import (
    MoveTaskUnsupported,
    Outgoing,
    Progress,
    QueuedMessage,
    Step,
    TaskStatus,
    move_messages,
    peek,
    run_move_task,
)
from tests.unit.fake_queues import FakeMoveTasks, FakeQueues

DLQ = "https://sqs/dlq"
SOURCE = "https://sqs/source"


class Interrupted(Exception):
    pass


def filled(count: int) -> FakeQueues:
    queues = FakeQueues()
    for n in range(count):
        queues.put(DLQ, json.dumps({"id": f"evt-{n:03d}"}))
    return queues


def back_to_source(message: QueuedMessage) -> Outgoing:
    lineage = {"intentbus.redriven_from": {"DataType": "String", "StringValue": message.message_id}}
    return Outgoing(SOURCE, message.body, {**message.message_attributes, **lineage})


def ids(bodies: list[str]) -> list[str]:
    return sorted(json.loads(body)["id"] for body in bodies)


def test_every_message_moves_once_with_its_lineage() -> None:
    queues = filled(25)
    steps: list[Progress] = []

    report = move_messages(queues, DLQ, back_to_source, on_progress=steps.append)

    assert report.moved == 25
    assert report.complete
    assert queues.bodies(DLQ) == []
    assert ids(queues.bodies(SOURCE)) == [f"evt-{n:03d}" for n in range(25)]
    assert [step.moved for step in steps] == list(range(1, 26))
    assert {step.step for step in steps} == {Step.MOVED}
    lineage = [a["intentbus.redriven_from"]["StringValue"] for a in queues.attributes(SOURCE)]
    assert sorted(lineage) == sorted(report.moved_ids)
    assert queues.calls.count("send") == 3, "batches of ten"


def test_a_dry_run_counts_and_moves_nothing() -> None:
    queues = filled(23)
    steps: list[Progress] = []

    report = move_messages(queues, DLQ, back_to_source, dry_run=True, on_progress=steps.append)

    assert report.moved == 23
    assert {step.step for step in steps} == {Step.WOULD_MOVE}
    assert "send" not in queues.calls
    assert "delete" not in queues.calls
    assert queues.visible(DLQ) == 23, "every message it looked at is visible again"


def test_max_moves_that_many_and_leaves_the_rest_visible() -> None:
    queues = filled(30)

    report = move_messages(queues, DLQ, back_to_source, max_messages=13)

    assert report.moved == 13
    assert len(queues.bodies(SOURCE)) == 13
    assert queues.visible(DLQ) == 17


def test_interrupted_between_send_and_delete_loses_nothing_and_a_rerun_moves_the_rest() -> None:
    queues = filled(100)

    def crash(operation: str, before: int) -> None:
        if operation == "delete" and before == 5:  # the sixth batch was sent; its delete never happens
            raise Interrupted

    queues.crash = crash
    with pytest.raises(Interrupted):
        move_messages(queues, DLQ, back_to_source)

    assert len(queues.bodies(SOURCE)) == 60
    assert len(queues.bodies(DLQ)) == 50, "the sixth batch is in both queues: nothing lost"
    assert queues.visible(DLQ) == 50, "the interrupted run released what it held"

    queues.crash = lambda operation, before: None
    rerun = move_messages(queues, DLQ, back_to_source)

    assert rerun.moved == 50
    assert queues.bodies(DLQ) == []
    moved = ids(queues.bodies(SOURCE))
    assert sorted(set(moved)) == [f"evt-{n:03d}" for n in range(100)], "every message arrived"
    assert len(moved) == 110, "the ten sent before the crash arrived twice: a duplicate, never a loss"


def test_killed_without_releasing_the_held_messages_come_back_after_their_visibility_timeout() -> None:
    queues = filled(40)

    def crash(operation: str, before: int) -> None:
        if (operation == "delete" and before == 2) or operation == "release":
            raise Interrupted

    queues.crash = crash
    with pytest.raises(Interrupted):
        move_messages(queues, DLQ, back_to_source, visibility_timeout=30)
    assert queues.visible(DLQ) == 10, "the third batch is still hidden"

    queues.crash = lambda operation, before: None
    assert move_messages(queues, DLQ, back_to_source).moved == 10
    queues.now += 31
    assert move_messages(queues, DLQ, back_to_source).moved == 10
    assert sorted(set(ids(queues.bodies(SOURCE)))) == [f"evt-{n:03d}" for n in range(40)]


def test_a_message_that_fails_to_send_stays_in_the_source() -> None:
    queues = filled(12)
    queues.fail_send = lambda url, outgoing: json.loads(outgoing.body)["id"] == "evt-004"

    report = move_messages(queues, DLQ, back_to_source)

    assert (report.moved, report.failed, report.complete) == (11, 1, False)
    assert ids(queues.bodies(DLQ)) == ["evt-004"]
    assert queues.visible(DLQ) == 1


def test_a_message_whose_delete_failed_is_reported_and_still_in_the_source() -> None:
    queues = filled(5)
    first = queues.queues[DLQ][0].message_id
    queues.fail_delete = lambda message_id: message_id == first

    report = move_messages(queues, DLQ, back_to_source)

    assert (report.moved, report.sent_not_deleted, report.complete) == (5, 1, False)
    assert ids(queues.bodies(DLQ)) == ["evt-000"]
    assert len(queues.bodies(SOURCE)) == 5


def test_a_plan_can_skip_messages_which_stay_where_they_are() -> None:
    queues = filled(8)
    report = move_messages(
        queues, DLQ, lambda m: None if json.loads(m.body)["id"] < "evt-004" else back_to_source(m)
    )
    assert (report.moved, report.skipped) == (4, 4)
    assert ids(queues.bodies(DLQ)) == ["evt-000", "evt-001", "evt-002", "evt-003"]
    assert queues.visible(DLQ) == 4


def test_a_copy_of_a_moved_message_delivered_again_is_deleted_not_sent_twice() -> None:
    queues = filled(3)
    original = queues.queues[DLQ][0]
    real_receive = queues.receive
    copied: list[bool] = []

    def receive_with_a_copy(
        queue_url: str, *, max_messages: int, visibility_timeout: int
    ) -> list[QueuedMessage]:
        received = real_receive(queue_url, max_messages=max_messages, visibility_timeout=visibility_timeout)
        if not received and not copied:  # SQS's at-least-once: the first message once more
            copied.append(True)
            queues.queues[DLQ].append(original)
            original.visible_at = queues.now
            return real_receive(queue_url, max_messages=max_messages, visibility_timeout=visibility_timeout)
        return received

    queues.receive = receive_with_a_copy  # type: ignore[method-assign]
    report = move_messages(queues, DLQ, back_to_source)
    assert copied
    assert report.moved == 3
    assert len(queues.bodies(SOURCE)) == 3
    assert queues.bodies(DLQ) == []


def test_peek_shows_every_message_and_leaves_them_visible() -> None:
    queues = filled(17)
    seen = peek(queues, DLQ)
    assert ids([message.body for message in seen]) == [f"evt-{n:03d}" for n in range(17)]
    assert queues.visible(DLQ) == 17
    assert len(peek(queues, DLQ, limit=5)) == 5


def test_negative_max_is_refused() -> None:
    with pytest.raises(ValueError, match="max_messages"):
        move_messages(filled(1), DLQ, back_to_source, max_messages=-1)


def test_the_move_task_is_followed_until_it_completes() -> None:
    tasks = FakeMoveTasks(total=100, per_poll=40)
    seen: list[TaskStatus] = []
    slept: list[float] = []

    final = run_move_task(tasks, "arn:dlq", on_status=seen.append, sleep=slept.append, poll_seconds=2)

    assert final.status == "COMPLETED"
    assert final.moved == 100
    assert [status.moved for status in seen] == [0, 40, 80, 100]
    assert slept == [2, 2, 2]
    assert tasks.started == [("arn:dlq", None)]


def test_without_wait_the_task_is_only_started() -> None:
    tasks = FakeMoveTasks(total=10)
    slept: list[float] = []
    status = run_move_task(tasks, "arn:dlq", "arn:dest", wait=False, sleep=slept.append)
    assert slept == []
    assert status.status == "RUNNING"
    assert tasks.started == [("arn:dlq", "arn:dest")]


def test_an_endpoint_without_the_move_task_says_so() -> None:
    with pytest.raises(MoveTaskUnsupported):
        run_move_task(FakeMoveTasks(total=1, supported=False), "arn:dlq")
