"""Each fault does what it says on the local cloud (one forced fault per schedule), and a seed replays."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from intentbus_faults.harness import FaultHarness
from intentbus_faults.schedule import fanout_input, generate, incident_input, schedule_of
from intentbus_local.faults import (
    CRASH_AFTER,
    DUPLICATE,
    HANDLER_TIMEOUT,
    PARTIAL_PUT_EVENTS,
    REORDER,
    VISIBILITY_LAPSE,
)
from intentbus_local.lambda_runtime import FunctionTimeoutError, Invocation, handler_module_name


@pytest.fixture
def invocations(harness: FaultHarness) -> Iterator[list[Invocation]]:
    seen: list[Invocation] = []
    remove = harness.cloud.add_observer(seen.append)
    yield seen
    remove()


def of(invocations: list[Invocation], function: str) -> list[Invocation]:
    return [i for i in invocations if i.function_logical_id == function]


def records(invocation: Invocation) -> list[tuple[str, int, str]]:
    """(message id, receive count, envelope type) of each record."""
    return [
        (
            r["messageId"],
            int(r["attributes"]["ApproximateReceiveCount"]),
            json.loads(r["body"])["detail"]["type"],
        )
        for r in invocation.event["Records"]
    ]


def test_a_crash_after_a_write_keeps_the_write_and_redelivers_the_whole_batch(
    harness: FaultHarness, invocations: list[Invocation]
) -> None:
    schedule = schedule_of(
        9301, incident_input(9301), forced={("DecideFunction:dynamodb.TransactWriteItems", 0): CRASH_AFTER}
    )

    result = harness.run(schedule)

    first, second, *_ = of(invocations, "DecideFunction")
    assert first.crashed
    assert first.response is None
    assert [(m, n) for m, n, _ in records(second)] == [(m, 2) for m, _, _ in records(first)]
    assert result.violations == []
    assert set(result.statuses.values()) == {"COMPLETED"}


def test_a_sandbox_that_crashed_or_timed_out_is_not_used_again(harness: FaultHarness) -> None:
    """As on Lambda, the invocation after a crash or a timeout is a cold start (the handler module, the
    stage and its clients built anew), so a fault schedule also tests what a cold start must rebuild;
    an invocation that only failed keeps its warm container."""
    sandboxes: dict[str, list[tuple[ModuleType | None, bool]]] = {}

    def seen(invocation: Invocation) -> None:
        module = sys.modules.get(handler_module_name(invocation.function_logical_id))
        sandboxes.setdefault(invocation.function_logical_id, []).append((module, invocation.failed))

    remove = harness.cloud.add_observer(seen)
    schedule = schedule_of(
        9305,
        incident_input(9305),
        forced={
            ("DecideFunction:dynamodb.TransactWriteItems", 0): CRASH_AFTER,
            ("RecordFunction:events.PutEvents", 0): HANDLER_TIMEOUT,
        },
    )
    try:
        result = harness.run(schedule)
    finally:
        remove()

    for function in ("DecideFunction", "RecordFunction"):
        (after_fault, failed), (next_sandbox, _), *_ = sandboxes[function]
        assert failed, f"{function}'s fault did not fail its invocation"
        assert after_fault is None, f"{function}'s sandbox was kept after its fault"
        assert next_sandbox is not None, f"{function} did not start a new sandbox"
    assert all(module is not None for module, _ in sandboxes["AuthorizeFunction"])
    assert result.violations == []
    assert set(result.statuses.values()) == {"COMPLETED"}


def test_partially_failed_put_events_delivers_only_the_others(
    harness: FaultHarness, invocations: list[Invocation]
) -> None:
    schedule = schedule_of(
        9302, fanout_input(9302), forced={("DecideFunction:events.PutEvents", 0): PARTIAL_PUT_EVENTS}
    )

    result = harness.run(schedule)

    assert result.injected[0].detail.endswith("entries failed")
    proposed = [r for i in of(invocations, "AuthorizeFunction") for r in records(i)]
    assert [t for _, _, t in proposed] == ["CommandProposed", "CommandProposed"], "each delivered once"
    assert result.violations == []


def test_a_lapsed_visibility_timeout_delivers_the_batch_again_before_its_delete(
    harness: FaultHarness, invocations: list[Invocation]
) -> None:
    schedule = schedule_of(9303, incident_input(9303), forced={("DecideQueue:lapse", 0): VISIBILITY_LAPSE})

    result = harness.run(schedule)

    first, second, *_ = of(invocations, "DecideFunction")
    assert not first.failed
    assert [(m, n) for m, n, _ in records(second)] == [(m, 2) for m, _, _ in records(first)]
    assert invocations.index(second) == invocations.index(first) + 1
    assert result.violations == []


def test_a_handler_past_its_timeout_is_reported_timed_out_and_redelivered(
    harness: FaultHarness, invocations: list[Invocation]
) -> None:
    schedule = schedule_of(
        9304, incident_input(9304), forced={("RecordFunction:events.PutEvents", 0): HANDLER_TIMEOUT}
    )

    result = harness.run(schedule)

    first, *later = of(invocations, "RecordFunction")
    assert isinstance(first.error, FunctionTimeoutError)
    (message, _, _), *_ = records(first)
    assert any((message, 2) == (m, n) for i in later for m, n, _ in records(i)), "redelivered"
    assert result.violations == []


def test_duplicates_are_extra_copies_of_the_same_body(
    harness: FaultHarness, invocations: list[Invocation]
) -> None:
    result = harness.run(
        schedule_of(9305, incident_input(9305), forced={("AuthorizeQueue:message", 0): DUPLICATE})
    )

    bodies = [r["body"] for i in of(invocations, "AuthorizeFunction") for r in i.event["Records"]]
    ids = {r["messageId"] for i in of(invocations, "AuthorizeFunction") for r in i.event["Records"]}
    copies = 1 + int(result.injected[0].detail.split()[0])
    assert bodies[:copies] == [bodies[0]] * copies
    assert len(ids) == len(bodies)
    assert result.violations == []


def test_a_reordered_batch_runs_its_later_part_first(
    harness: FaultHarness, invocations: list[Invocation]
) -> None:
    result = harness.run(schedule_of(9306, fanout_input(9306), forced={("AuthorizeQueue:batch", 0): REORDER}))

    first, second, *_ = of(invocations, "AuthorizeFunction")
    assert len(records(first)) == len(records(second)) == 1
    assert result.violations == []


def test_a_seed_replays_the_same_schedule_and_faults(harness: FaultHarness) -> None:
    assert generate(20261207) == generate(20261207)
    rates = {CRASH_AFTER: 0.03, DUPLICATE: 0.2, HANDLER_TIMEOUT: 0.03, VISIBILITY_LAPSE: 0.2}
    schedule = schedule_of(9307, incident_input(9307), fanout_input(9307), rates=rates, max_faults=5)

    first, again = harness.run(schedule), harness.run(schedule)

    assert first.injected, "pick a seed that injects faults"
    assert [str(f) for f in again.injected] == [str(f) for f in first.injected]
    assert again.statuses == first.statuses
    assert again.violations == first.violations
