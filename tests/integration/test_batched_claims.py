"""execute's guard reads an SQS batch's checks together on moto: one BatchGetItem for the batch, each answer
exactly what the claim's own read gives, served once and only to its own claim; a forged fact in the batch
is still refused, and a claim made again (after a lapse, a refusal) reads afresh."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.execution_claim import Claim, ClaimRequest, ClaimStatus
from intentbus.journal import Outcome
from intentbus.stages.execute import ExecuteStage
from tests.bench.aws_calls import measure_fleet
from tests.integration.conftest_moto import (  # noqa: F401  (fixtures)
    Resources,
    aws,
    client,
    create_workflow_table,
    resources,
)
from tests.integration.test_adapters import TENANT
from tests.integration.test_batched_snapshots import CountingClient, started_run
from tests.integration.test_seed_tools import _incident_body, _world

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def claim_for(run_id: str, *, digest: str = "d", tenant_id: str = TENANT, command: str = "") -> ClaimRequest:
    """The claim of ``run_id``'s authorized command (``started_run`` records digest ``d`` for it)."""
    return ClaimRequest(
        tenant_id=tenant_id,
        run_id=run_id,
        command_id=command or f"cmd-{run_id}",
        resource=None,
        seen_version=None,
        authorization=digest,
        now=NOW,
    )


def guard_over(dynamodb: CountingClient, runs: list[str]) -> DynamoExecutionGuard:
    table = create_workflow_table(dynamodb._inner)
    store = DynamoWorkflowStore(table, dynamodb)  # type: ignore[arg-type]
    for run_id in runs:
        started_run(store, run_id, authorized=f"cmd-{run_id}")
    return DynamoExecutionGuard(table, dynamodb)  # type: ignore[arg-type]


def claimed(guard: DynamoExecutionGuard, request: ClaimRequest) -> Claim:
    return guard.claim(**request.arguments())


def test_one_call_checks_the_whole_batch_each_as_its_own_read_would(aws: None) -> None:  # noqa: F811
    dynamodb = CountingClient(client("dynamodb"))
    runs = [f"run-{n}" for n in range(10)]
    guard = guard_over(dynamodb, runs)
    batch = [*(claim_for(run_id) for run_id in runs), claim_for("run-none")]
    alone = [claimed(guard, request) for request in batch]
    dynamodb.batch_gets = 0

    guard.prefetch(batch)
    together = [claimed(guard, request) for request in batch]

    assert dynamodb.batch_gets == 1  # 21 keys, one call; then no claim read again
    assert together == alone
    assert together[0] == Claim(ClaimStatus.CLAIMED)
    assert together[-1] == Claim(ClaimStatus.NOT_AUTHORIZED)  # no such run


def test_an_answer_is_served_once_so_a_claim_made_again_reads_what_changed(aws: None) -> None:  # noqa: F811
    # A claim made again (after a lapsed attempt, a legacy run's second look) must not see the batch's read.
    dynamodb = CountingClient(client("dynamodb"))
    guard = guard_over(dynamodb, ["run-0", "run-1"])
    first, other = claim_for("run-0"), claim_for("run-1")
    guard.prefetch([first, other])
    assert claimed(guard, first) == Claim(ClaimStatus.CLAIMED)
    ended = {"pk": {"S": f"T#{TENANT}#WF#run-0"}, "sk": {"S": "STATE"}}
    dynamodb._inner.update_item(
        TableName=guard._table,
        Key=ended,
        UpdateExpression="SET #s = :ended",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":ended": {"S": "COMPLETED"}},
    )
    reads = dynamodb.batch_gets

    again = claimed(guard, claim_for("run-0"))

    assert again == Claim(ClaimStatus.RUN_ENDED, run_status="COMPLETED")
    assert dynamodb.batch_gets == reads + 1
    assert guard.prefetched == 1
    guard.forget()
    assert guard.prefetched == 0


def test_keys_left_unprocessed_and_a_failed_read_leave_claims_to_read_alone(aws: None) -> None:  # noqa: F811
    dynamodb = CountingClient(client("dynamodb"), unprocessed=(f"T#{TENANT}#WF#run-1",))
    guard = guard_over(dynamodb, ["run-0", "run-1"])
    dynamodb.batch_gets = 0

    guard.prefetch([claim_for("run-0"), claim_for("run-1")])

    assert dynamodb.batch_gets == 2  # the unprocessed keys were asked once more, then left
    assert guard.prefetched == 1

    class Throttled(CountingClient):
        def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
            error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
            raise ClientError(error, "BatchGetItem")  # type: ignore[arg-type]

    throttled = DynamoExecutionGuard(guard._table, Throttled(dynamodb._inner))  # type: ignore[arg-type]
    throttled.prefetch([claim_for("run-0"), claim_for("run-1")])  # does not raise
    assert throttled.prefetched == 0


def test_more_keys_than_one_call_takes_are_read_in_calls_of_a_hundred(aws: None) -> None:  # noqa: F811
    dynamodb = CountingClient(client("dynamodb"))
    guard = guard_over(dynamodb, [])
    dynamodb.batch_gets = 0

    guard.prefetch([claim_for(f"run-{n}") for n in range(60)])  # 120 keys

    assert dynamodb.batch_gets == 2
    assert guard.prefetched == 60


def test_a_forged_claim_in_the_batch_is_refused_and_sees_none_of_its_neighbours_items(
    aws: None,  # noqa: F811
) -> None:
    # The attacks: a digest not recorded for the real command; run-a's command and digest claimed under
    # run-b; and under another tenant. Each is read from its own keys only, all in the genuine claim's call.
    dynamodb = CountingClient(client("dynamodb"))
    guard = guard_over(dynamodb, ["run-a", "run-b"])
    genuine = claim_for("run-a")
    forged = [
        claim_for("run-a", digest="forged"),
        claim_for("run-b", command="cmd-run-a"),
        claim_for("run-a", tenant_id="intruder"),
    ]
    dynamodb.batch_gets = 0

    guard.prefetch([genuine, *forged])
    answers = [claimed(guard, request) for request in forged]

    assert dynamodb.batch_gets == 1
    assert answers == [Claim(ClaimStatus.NOT_AUTHORIZED)] * 3
    assert claimed(guard, genuine) == Claim(ClaimStatus.CLAIMED)


def _forged(body: str, change: dict[str, Any]) -> str:
    """``body`` with its CommandAuthorized's command changed: a fact no authorization recorded."""
    event = json.loads(body)
    event["detail"]["payload"]["command"].update(change)
    return json.dumps(event)


def test_through_the_stage_a_batch_reads_once_and_a_forged_fact_is_quarantined(
    resources: Resources,  # noqa: F811
) -> None:
    world = _world(resources)
    pipeline = world.pipeline
    genuine = []
    for n in range(2):
        event = json.loads(_incident_body("dev"))
        event["detail"]["payload"]["p99_ms"] += n  # another incident: another run
        body = json.dumps(event)
        for upstream in ("validate", "decide", "authorize"):
            body = pipeline.deliver(upstream, body).delivered_bodies[0]
        genuine.append(body)
    assert json.loads(genuine[0])["detail"]["run_id"] != json.loads(genuine[1])["detail"]["run_id"]
    command_a = json.loads(genuine[0])["detail"]["payload"]["command"]
    forgeries = [
        _forged(genuine[0], {"idempotency_key": "forged-key"}),  # its digest is recorded nowhere
        _forged(genuine[1], {"id": command_a["id"]}),  # run-a's command id, claimed under the other run
        _forged(genuine[0], {"tenant_id": "intruder"}),
    ]
    stage = pipeline.stages["execute"]
    assert isinstance(stage, ExecuteStage)
    batch = [genuine[0], *forgeries, genuine[1]]
    pipeline.log.clear()

    stage.prefetch(batch)
    results = [stage.handle(body, f"msg-{n}") for n, body in enumerate(batch)]
    stage.end_batch()

    outcomes = [result.outcome for result in results]
    assert outcomes == [Outcome.APPLIED, *[Outcome.QUARANTINED] * 3, Outcome.APPLIED]
    assert all(result.forged for result in results[1:4])
    checks = [
        call
        for call in pipeline.log.of("dynamodb", "BatchGetItem")
        if resources.workflow_table in json.dumps(call.request)
    ]
    assert len(checks) == 1, "the batch's checks were not read together"


def test_on_the_local_cloud_execute_checks_a_batch_of_distinct_runs_in_one_read() -> None:
    # Five incidents at once: execute's queue hands over batches of five runs' commands (drive_fleet checks
    # that every run completed).
    stages, _ = measure_fleet(runs=5)

    # Per record: a fifth of the batch's one check, then three of the incident's four tools only read (one
    # put stores the result) and the scale takes the in-progress write and the result's save (was: 3, 2.2).
    assert stages["execute"].dynamodb_per_event == pytest.approx(0.2 + (3 * 1 + 2) / 4)


def test_a_claim_asked_as_its_request_answers_as_its_arguments_do(aws: None) -> None:  # noqa: F811
    """Execute hands the guard its request (``claim_request``): each answer, read alone or ahead, is the one
    ``claim`` gives for the request's arguments, a resource's move included."""
    dynamodb = CountingClient(client("dynamodb"))
    guard = guard_over(dynamodb, ["run-0", "run-1"])
    batch = [
        claim_for("run-0"),
        claim_for("run-0", digest="forged"),
        claim_for("run-none"),
        ClaimRequest(**{**claim_for("run-1").arguments(), "resource": "svc", "seen_version": 0}),
    ]
    alone = [claimed(guard, request) for request in batch]  # the resource now at version 1, by cmd-run-1
    # another command at the version the resource has left (unchecked authorization: a legacy run's claim)
    moved_again = ClaimRequest(**{**batch[-1].arguments(), "command_id": "another", "authorization": None})
    assert claimed(guard, moved_again) == Claim(ClaimStatus.CONFLICT, holder="cmd-run-1")

    by_request = [guard.claim_request(request) for request in batch]
    guard.prefetch(batch)
    ahead = [guard.claim_request(request) for request in batch]

    assert by_request == ahead == alone
    assert [claim.status for claim in alone] == [
        ClaimStatus.CLAIMED,
        ClaimStatus.NOT_AUTHORIZED,
        ClaimStatus.NOT_AUTHORIZED,
        ClaimStatus.CLAIMED,  # the same command again: its claim passes
    ]
    assert guard.claim_request(moved_again) == Claim(ClaimStatus.CONFLICT, holder="cmd-run-1")
