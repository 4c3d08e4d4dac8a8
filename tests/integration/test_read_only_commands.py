"""A command whose tool only reads and names no resource runs without the in-progress lock (on DynamoDB):
the guard's check first, the tool, then one conditional put of the completed record. The first result
stored is the one every delivery publishes; forgeries are refused before the tool runs; a record another
attempt holds in progress is never overwritten."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard
from intentbus.adapters.idempotency import (
    GuardedPersistenceLayer,
    PowertoolsIdempotentRunner,
    StoresCompleted,
)
from intentbus.envelope import Envelope
from intentbus.errors import NotRecorded
from intentbus.journal import Outcome
from intentbus.ports import KeyHeldByAnotherCommand
from intentbus.stages.execute import ExecuteStage
from tests.command_envelopes import command_envelope
from tests.integration.conftest_moto import (  # noqa: F401
    IDEMPOTENCY_TABLE,
    CallLog,
    Crash,
    Resources,
    aws,
    client,
    crash,
    create_workflow_table,
    execute_runner,
    resources,
)
from tests.integration.test_seed_tools import _incident_body, _world


@pytest.fixture
def log() -> CallLog:
    return CallLog()


@pytest.fixture
def runner(aws: None, monkeypatch: pytest.MonkeyPatch, log: CallLog) -> PowertoolsIdempotentRunner:  # noqa: F811
    """On DynamoDB with the guard, its calls logged in ``log``."""
    dynamodb = client("dynamodb")
    guard = DynamoExecutionGuard(create_workflow_table(dynamodb), dynamodb)
    runner = execute_runner(monkeypatch, dynamodb, guard=guard)
    log.attach(dynamodb)
    return runner


def command(payload: dict[str, Any] | None = None) -> Envelope:
    return command_envelope("k1", id="cmd-1", type="diagnose", payload=payload or {"service": "svc"})


def records() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = client("dynamodb").scan(TableName=IDEMPOTENCY_TABLE)["Items"]
    return items


def test_one_conditional_put_stores_the_result_and_either_path_reads_the_other(
    runner: PowertoolsIdempotentRunner, log: CallLog
) -> None:
    log.clear()

    assert runner.run_read_only(command(), lambda: {"read": 1}) == {"read": 1}

    assert log.operations() == ["PutItem"]
    (item,) = records()
    assert item["status"]["S"] == "COMPLETED"
    assert "in_progress_expiration" not in item
    # The locked path finds the record and answers from it, without running its work.
    assert runner.run(command(), lambda: {"read": "locked"}) == {"read": 1}

    fresh = command_envelope("k2", id="cmd-2", type="diagnose", payload={"service": "svc"})
    assert runner.run(fresh, lambda: {"read": "locked"}) == {"read": "locked"}
    assert runner.run_read_only(fresh, lambda: {"read": "unlocked"}) == {"read": "locked"}


def test_two_racing_deliveries_both_answer_with_the_first_stored_result(
    runner: PowertoolsIdempotentRunner,
) -> None:
    answers: list[dict[str, Any]] = []

    def first() -> dict[str, Any]:
        # The second delivery runs and stores its result while the first one's tool is still reading.
        answers.append(runner.run_read_only(command(), lambda: {"read": "second"}))
        return {"read": "first"}

    answers.append(runner.run_read_only(command(), first))

    assert answers == [{"read": "second"}, {"read": "second"}]
    assert len(records()) == 1


def test_another_payload_under_the_key_is_refused_and_stores_nothing(
    runner: PowertoolsIdempotentRunner,
) -> None:
    runner.run_read_only(command(), lambda: {"read": 1})
    before = records()

    with pytest.raises(KeyHeldByAnotherCommand):
        runner.run_read_only(command({"service": "other"}), lambda: {"read": "forged"})

    assert records() == before


def test_a_refused_claim_writes_nothing(runner: PowertoolsIdempotentRunner) -> None:
    def refused() -> dict[str, Any]:
        raise NotRecorded("no such authorization", field="detail")

    with pytest.raises(NotRecorded):
        runner.run_read_only(command(), refused)

    assert records() == []
    assert runner.run_read_only(command(), lambda: {"read": 1}) == {"read": 1}


def test_a_record_in_progress_is_left_to_its_attempt(runner: PowertoolsIdempotentRunner) -> None:
    """An attempt on the locked path (a deployment before this one) holds the key while this one reads."""
    raised: list[BaseException] = []

    def locked() -> dict[str, Any]:
        try:
            runner.run_read_only(command(), lambda: {"read": "unlocked"})
        except IdempotencyAlreadyInProgressError as error:
            raised.append(error)
        return {"read": "locked"}

    assert runner.run(command(), locked) == {"read": "locked"}

    assert len(raised) == 1, "the record in progress was overwritten"
    assert runner.run_read_only(command(), lambda: {"read": "again"}) == {"read": "locked"}


def test_a_lapsed_record_in_progress_is_checked_as_the_locked_path_checks_it(
    runner: PowertoolsIdempotentRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Crash):
        runner.run(command(), crash)
    monkeypatch.setenv(CLOCK_OFFSET_ENV, "31")  # the 30 s lease has lapsed on the virtual clock

    result = runner.run_read_only(command(), lambda: {"read": 1}, after_lapse=lambda: {"checked": True})

    assert result == {"checked": True}
    (item,) = records()
    assert item["status"]["S"] == "COMPLETED"


# ------------------------------------------------------------------ through the execute stage


def diagnostics_command(resources: Resources) -> tuple[Any, str]:  # noqa: F811
    """The pipeline and the incident's first CommandAuthorized (collect_diagnostics, READ_ONLY)."""
    world = _world(resources)
    body = _incident_body("dev")
    for stage in ("validate", "decide", "authorize"):
        body = world.pipeline.deliver(stage, body).delivered_bodies[0]
    assert json.loads(body)["detail"]["payload"]["command"]["type"] == "collect_diagnostics"
    return world.pipeline, body


def _forged(body: str, change: dict[str, Any]) -> str:
    """``body`` with its command changed (its payload's fields merged in): no authorization recorded it."""
    event = json.loads(body)
    command = event["detail"]["payload"]["command"]
    command.update({**change, "payload": {**command["payload"], **change.get("payload", {})}})
    return json.dumps(event)


FORGERIES = pytest.mark.parametrize(
    "change",
    [
        {"idempotency_key": "forged-key"},  # a digest recorded nowhere
        {"run_id": "another-run"},
        {"tenant_id": "intruder"},
        {"payload": {"service": "billing-api"}},  # the genuine command's key, another payload
    ],
    ids=["digest-not-recorded", "another-run", "another-tenant", "another-payload"],
)
"""Forgeries of a genuine read-only command, each refused before its tool runs (on either store)."""


def check_a_forgery_is_refused_before_its_tool_runs(
    resources: Resources,  # noqa: F811
    change: dict[str, Any],
    stored_records: Callable[[], Any],
) -> None:
    pipeline, genuine = diagnostics_command(resources)
    applied = pipeline.deliver("execute", genuine)
    stored = stored_records()

    forged = pipeline.deliver("execute", _forged(genuine, change))

    assert forged.outcome == Outcome.QUARANTINED.value
    assert forged.of("monitoring") == [], "the forged command's tool ran"
    assert forged.published == ()
    assert stored_records() == stored
    assert applied.outcome == Outcome.APPLIED.value


@FORGERIES
def test_a_forged_read_only_command_is_refused_before_its_tool_runs(
    resources: Resources,  # noqa: F811
    change: dict[str, Any],
) -> None:
    check_a_forgery_is_refused_before_its_tool_runs(resources, change, records)


def test_through_the_stage_a_read_only_command_writes_once_and_takes_no_lock(
    resources: Resources,  # noqa: F811
) -> None:
    pipeline, body = diagnostics_command(resources)

    hop = pipeline.deliver("execute", body)

    assert hop.outcome == Outcome.APPLIED.value
    assert [c.operation for c in hop.dynamodb()] == ["BatchGetItem", "PutItem"]
    assert len(hop.of("monitoring")) > 0
    again = pipeline.deliver("execute", body)
    assert again.outcome == Outcome.DUPLICATE.value
    # The fact the first delivery made and the one read back from its stored result: byte for byte.
    assert [e.json_text for e in again.published] == [e.json_text for e in hop.published]


def test_through_the_stage_racing_deliveries_publish_the_first_stored_result(
    resources: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check_racing_deliveries_publish_the_first_stored_result(resources, monkeypatch, GuardedPersistenceLayer)


def check_racing_deliveries_publish_the_first_stored_result(
    resources: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    layer: type[StoresCompleted],
) -> None:
    """The other delivery stores its result between this one's tool and its put (on ``layer``'s store)."""
    pipeline, body = diagnostics_command(resources)
    stage = pipeline.stages["execute"]
    assert isinstance(stage, ExecuteStage)
    put_completed = layer.put_completed
    inner: list[Any] = []
    raced = False

    def racing(self: StoresCompleted, data: dict[str, Any], result: dict[str, Any]) -> Any:
        nonlocal raced
        if not raced:
            raced = True
            inner.append(stage.handle(body, "msg-other"))
        return put_completed(self, data, result)

    monkeypatch.setattr(layer, "put_completed", racing)
    outer = stage.handle(body, "msg-first")

    (other,) = inner
    assert (other.outcome, outer.outcome) == (Outcome.APPLIED, Outcome.DUPLICATE)
    assert outer.published == other.published
    assert [e.json_text for e in outer.published] == [e.json_text for e in other.published]
    assert [e.type for e in outer.published] == ["CommandExecuted"]
