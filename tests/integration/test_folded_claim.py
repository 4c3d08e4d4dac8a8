"""On DynamoDB, the execution guard reads the run and the authorization once, then Powertools' in-progress
put travels with the guard's claim: one write claims the idempotency key and moves the resource's
version (a plain put when the command names no resource)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard
from intentbus.adapters.dynamodb_store import RESOURCE_SK, STATE_SK, resource_pk, run_pk
from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
from intentbus.envelope import Envelope
from intentbus.execution_claim import Claim, ClaimRequest, ClaimStatus
from tests.command_envelopes import command_envelope
from tests.integration.conftest_moto import (  # noqa: F401
    CallLog,
    Crash,
    aws,
    client,
    create_workflow_table,
    execute_runner,
)

TENANT, RUN = "acme", "run-1"


@dataclass
class Env:
    runner: PowertoolsIdempotentRunner
    dynamodb: Any
    workflow_table: str
    log: CallLog

    def start_run(self, status: str = "RUNNING") -> None:
        item = {"pk": {"S": run_pk(TENANT, RUN)}, "sk": {"S": STATE_SK}, "status": {"S": status}}
        self.dynamodb.put_item(TableName=self.workflow_table, Item=item)

    def resource_version(self) -> int:
        key = {"pk": {"S": resource_pk(TENANT, "svc")}, "sk": {"S": RESOURCE_SK}}
        item = self.dynamodb.get_item(TableName=self.workflow_table, Key=key, ConsistentRead=True)
        return int(item.get("Item", {}).get("version", {}).get("N", 0))


@pytest.fixture
def env(aws: None, monkeypatch: pytest.MonkeyPatch) -> Env:  # noqa: F811
    dynamodb = client("dynamodb")
    workflow_table = create_workflow_table(dynamodb)
    runner = execute_runner(monkeypatch, dynamodb, guard=DynamoExecutionGuard(workflow_table, dynamodb))
    return Env(runner, dynamodb, workflow_table, CallLog().attach(dynamodb))


def command(key: str = "k1") -> Envelope:
    return command_envelope(
        key, id="cmd-1", type="scale", tenant_id=TENANT, run_id=RUN, payload={"service": "svc", "count": 4}
    )


def request(seen_version: int = 0) -> ClaimRequest:
    return ClaimRequest(
        tenant_id=TENANT,
        run_id=RUN,
        command_id="cmd-1",
        resource="svc",
        seen_version=seen_version,
        authorization=None,
        now=datetime.now(UTC),
    )


def run_taking_the_claim(env: Env, claim: ClaimRequest) -> list[Claim | None]:
    """Runs the command under ``claim`` (the calls logged from here); returns what the work's claim took."""
    made: list[Claim | None] = []

    def work() -> dict[str, Any]:
        made.append(claim.take())
        return {"scaled": True}

    env.log.clear()
    assert env.runner.run(command(), work, claim=claim) == {"scaled": True}
    return made


def test_one_read_and_one_transaction_claim_the_key_and_the_resource(env: Env) -> None:
    env.start_run()

    made = run_taking_the_claim(env, request())

    assert env.log.operations() == ["BatchGetItem", "TransactWriteItems", "UpdateItem"]
    assert made == [Claim(ClaimStatus.CLAIMED)]
    assert env.resource_version() == 1


def test_without_a_resource_the_key_is_claimed_by_one_plain_put(env: Env) -> None:
    env.start_run()
    claim = request()
    claim.resource = None

    made = run_taking_the_claim(env, claim)

    assert env.log.operations() == ["BatchGetItem", "PutItem", "UpdateItem"]
    assert made == [Claim(ClaimStatus.CLAIMED)]

    again = request()
    again.resource = None
    assert env.runner.run(command(), lambda: {"scaled": "twice"}, claim=again) == {"scaled": True}


def test_a_repeat_costs_one_read_and_one_cancelled_transaction_and_moves_nothing(env: Env) -> None:
    env.start_run()
    env.runner.run(command(), lambda: {"scaled": True}, claim=request())
    env.log.clear()

    again = env.runner.run(command(), lambda: {"scaled": "twice"}, claim=request())

    assert again == {"scaled": True}
    assert env.log.operations() == ["BatchGetItem", "TransactWriteItems"]
    assert env.resource_version() == 1


def test_a_refused_claim_still_takes_the_lease_and_leaves_the_refusal(env: Env) -> None:
    env.start_run("COMPLETED")
    claim = request()
    made: list[Claim | None] = []
    seen: list[str] = []

    def work() -> dict[str, Any]:
        made.append(claim.take())
        seen.extend(item["status"]["S"] for item in _idempotency_items(env))
        return {"skipped": True}

    env.runner.run(command(), work, claim=claim)

    assert [m.status for m in made if m is not None] == [ClaimStatus.RUN_ENDED]
    assert seen == ["INPROGRESS"], "the refused command ran without a lease"
    assert env.resource_version() == 0


def test_a_lease_held_by_another_attempt_refuses_before_any_claim(env: Env) -> None:
    """Attack: a second execute races on the key while the first holds its lease; its transaction is
    cancelled whole, so it claims nothing either."""
    env.start_run()
    with pytest.raises(Crash):
        env.runner.run(command(), _crash, claim=request())
    version = env.resource_version()

    with pytest.raises(IdempotencyAlreadyInProgressError):
        env.runner.run(command(), lambda: {"ran": True}, claim=request(seen_version=version))

    assert env.resource_version() == version


def test_a_lapsed_lease_is_noticed_and_claimed_apart(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env.start_run()
    with pytest.raises(Crash):
        env.runner.run(command(), _crash, claim=request())
    monkeypatch.setenv(CLOCK_OFFSET_ENV, "31")
    claim = request()
    left: list[Claim | None] = []

    def reconcile() -> dict[str, Any]:
        left.append(claim.take())
        return {"reconciled": True}

    result = env.runner.run(command(), lambda: {"ran": True}, reconcile, claim=claim)

    assert result == {"reconciled": True}
    assert left == [None], "after a lapse the stage claims on its own"


def _crash() -> dict[str, Any]:
    raise Crash


def _idempotency_items(env: Env) -> list[dict[str, Any]]:
    tables = env.dynamodb.list_tables()["TableNames"]
    table = next(name for name in tables if name != env.workflow_table)
    items: list[dict[str, Any]] = env.dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
    return items
