"""A batch's snapshots in one BatchGetItem on moto: each exactly what its own read returns, built only from
its own keys, and a request whose keys stay unprocessed is left to read alone."""

from __future__ import annotations

from typing import Any

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.journal import Authorization, Commit, CommitStatus
from intentbus.ports import SnapshotRequest
from tests.bench.aws_calls import measure_fleet
from tests.integration.conftest_moto import aws, client, create_workflow_table  # noqa: F401
from tests.integration.test_adapters import T0, TENANT, log_entry, workflow_state


class CountingClient:
    """The DynamoDB client, counting BatchGetItem calls; ``unprocessed`` pk prefixes are never processed."""

    def __init__(self, inner: Any, unprocessed: tuple[str, ...] = ()) -> None:
        self._inner = inner
        self._unprocessed = unprocessed
        self.batch_gets = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        self.batch_gets += 1
        (table, asked), *_ = RequestItems.items()
        held = [key for key in asked["Keys"] if key["pk"]["S"].startswith(self._unprocessed)]
        served = [key for key in asked["Keys"] if key not in held]
        response: dict[str, Any] = {"Responses": {table: []}}
        if served:
            response = dict(self._inner.batch_get_item(RequestItems={table: {**asked, "Keys": served}}))
        if held:
            response["UnprocessedKeys"] = {table: {**asked, "Keys": held}}
        return response


def started_run(store: DynamoWorkflowStore, run_id: str, *, authorized: str | None = None) -> None:
    authorization = (
        None
        if authorized is None
        else Authorization(
            command_id=authorized,
            fact_id=f"fact-{run_id}",
            digest="d",
            command_digest="c",
            by="authorize",
            at=T0,
        )
    )
    result = store.commit(
        Commit(
            entry=log_entry("authorize", f"proposal-{run_id}"),
            tenant_id=TENANT,
            run_id=run_id,
            expected_version=None,
            state=workflow_state(1, run_id=run_id),
            create=True,
            authorization=authorization,
        )
    )
    assert result.status is CommitStatus.COMMITTED


def requests_for(runs: list[str]) -> list[SnapshotRequest]:
    return [
        SnapshotRequest(
            TENANT,
            run_id,
            "record",
            f"outcome-{run_id}",
            resource="ecs:shop/api",
            proofs=(("authorize", f"proposal-{run_id}"),),
            authorization=f"cmd-{run_id}",
        )
        for run_id in runs
    ]


def test_one_call_reads_every_records_snapshot_exactly_as_its_own_read_would(aws: None) -> None:  # noqa: F811
    dynamodb = CountingClient(client("dynamodb"))
    store = DynamoWorkflowStore(create_workflow_table(dynamodb._inner), dynamodb)  # type: ignore[arg-type]
    runs = [f"run-{n}" for n in range(10)]
    for run_id in runs:
        started_run(store, run_id, authorized=f"cmd-{run_id}")
    requests = [*requests_for(runs), SnapshotRequest(TENANT, "run-none", "record", "outcome-x")]

    batched = store.snapshots(requests)

    assert dynamodb.batch_gets == 1  # 10 records x 5 keys + 2 keys: one call
    for request in requests:
        assert batched[request] == request.read_alone(store)
    assert batched[requests[0]].state is not None
    assert batched[requests[0]].authorization is not None
    assert batched[requests[0]].proof("authorize", "proposal-run-0") is not None
    assert batched[requests[-1]].state is None


def test_more_keys_than_one_call_takes_are_read_in_calls_of_a_hundred(aws: None) -> None:  # noqa: F811
    dynamodb = CountingClient(client("dynamodb"))
    store = DynamoWorkflowStore(create_workflow_table(dynamodb._inner), dynamodb)  # type: ignore[arg-type]
    requests = requests_for([f"run-{n}" for n in range(30)])  # 5 keys each (resource shared): 121 keys

    assert len(store.snapshots(requests)) == 30
    assert dynamodb.batch_gets == 2


def test_keys_left_unprocessed_leave_their_records_to_read_alone(aws: None) -> None:  # noqa: F811
    dynamodb = CountingClient(client("dynamodb"), unprocessed=(f"T#{TENANT}#WF#run-1",))
    store = DynamoWorkflowStore(create_workflow_table(dynamodb._inner), dynamodb)  # type: ignore[arg-type]
    for run_id in ("run-0", "run-1"):
        started_run(store, run_id)
    requests = requests_for(["run-0", "run-1"])

    batched = store.snapshots(requests)

    assert list(batched) == [requests[0]]  # run-1's keys stayed unprocessed: not answered, never guessed
    assert batched[requests[0]].state is not None
    assert dynamodb.batch_gets == 2  # the unprocessed keys were asked once more, then left


def test_a_forged_request_sees_none_of_its_neighbours_items(aws: None) -> None:  # noqa: F811
    # The attack: a record claiming run-b names, as its proof and authorization, what is recorded under its
    # neighbour run-a, read in the same call. Its snapshot is built from run-b's keys only.
    dynamodb = client("dynamodb")
    store = DynamoWorkflowStore(create_workflow_table(dynamodb), dynamodb)
    started_run(store, "run-a", authorized="cmd-run-a")
    legit = requests_for(["run-a"])[0]
    forged = SnapshotRequest(
        TENANT,
        "run-b",
        "record",
        "outcome-forged",
        proofs=(("authorize", "proposal-run-a"),),
        authorization="cmd-run-a",
    )
    other_tenant = SnapshotRequest("intruder", "run-a", "record", "outcome-x", proofs=legit.proofs)

    batched = store.snapshots([legit, forged, other_tenant])

    assert batched[legit].proof("authorize", "proposal-run-a") is not None
    assert batched[forged].proofs == {}
    assert batched[forged].authorization is None
    assert batched[forged].state is None
    assert batched[other_tenant].proofs == {}
    assert batched[other_tenant].state is None


def test_on_the_local_cloud_a_batch_of_distinct_runs_reads_once_and_every_run_completes() -> None:
    # Five incidents at once: each stage's queue hands over one batch of five runs (drive_fleet checks that
    # every service was scaled, i.e. every run completed).
    stages, _ = measure_fleet(runs=5)

    for stage in ("decide", "authorize", "record"):
        calls = stages[stage]
        # Per record: its write, and a fifth of the batch's one read (was: a read and a write each).
        assert calls.dynamodb_per_event == pytest.approx(1.2), (stage, calls)
    assert stages["validate"].dynamodb_per_event < 1.5  # producers' inputs are written without a read
