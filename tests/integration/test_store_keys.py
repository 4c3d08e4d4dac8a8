"""No hot key: the run listing and the expiry sweep's index spread over shards, a state write touches
the listing only when the run's status changes, and what the previous release wrote is still found."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from datetime import timedelta
from typing import Any

from intentbus.adapters.dynamodb_park import PARKED_SHARDS, DynamoParkStore
from intentbus.adapters.dynamodb_store import (
    ENTRY_COMPRESSED,
    DynamoWorkflowStore,
    approval_item,
    entry_item,
    run_pk,
    state_item,
)
from intentbus.adapters.key_shards import DUE_APPROVAL_SHARDS, RUN_LIST_SHARDS
from intentbus.approvals import ALL_PENDING_BY
from intentbus.journal import ApprovalStatus, Commit, CommitStatus
from intentbus.parked import Parked, ParkStatus
from intentbus.state import Status
from tests.integration.conftest_moto import aws, client, create_workflow_table  # noqa: F401
from tests.integration.test_adapters import RUN, T0, TENANT, _approval, envelope, log_entry, workflow_state


def store_on_moto() -> tuple[DynamoWorkflowStore, Any, str]:
    dynamodb = client("dynamodb")
    table = create_workflow_table(dynamodb)
    return DynamoWorkflowStore(table, dynamodb), dynamodb, table


def start(store: DynamoWorkflowStore, run_id: str, status: Status = Status.RUNNING) -> None:
    result = store.commit(
        Commit(
            entry=log_entry("decide", f"in-{run_id}"),
            tenant_id=TENANT,
            run_id=run_id,
            expected_version=None,
            state=workflow_state(1, run_id=run_id, status=status),
            create=True,
        )
    )
    assert result.status is CommitStatus.COMMITTED


def test_a_tenants_runs_spread_over_every_shard_and_all_come_back(aws: None) -> None:  # noqa: F811
    store, _, _ = store_on_moto()
    runs = [f"run-{n}" for n in range(64)]
    for run_id in runs:
        start(store, run_id)
    keys = Counter(state_item(workflow_state(1, run_id=run_id))["gsi3pk"]["S"] for run_id in runs)
    assert len(keys) == RUN_LIST_SHARDS
    assert max(keys.values()) <= 64 / RUN_LIST_SHARDS * 2  # no shard takes the tenant's writes
    assert sorted(state.run_id for state in store.runs(TENANT)) == sorted(runs)
    # the attack: another tenant lists runs; its shards are keyed by its own id, so it sees none
    assert store.runs("intruder") == []


def test_the_run_listing_moves_only_when_the_status_does() -> None:
    running = state_item(workflow_state(1))
    next_step = state_item(workflow_state(2))
    paused = state_item(workflow_state(3, status=Status.PAUSED))
    assert (running["gsi3pk"], running["gsi3sk"]) == (next_step["gsi3pk"], next_step["gsi3sk"])
    assert running["gsi3sk"] != paused["gsi3sk"]
    assert "gsi1pk" not in running  # the old listing (full item, rewritten every step) is not written


def test_runs_by_status_read_each_run_again(aws: None) -> None:  # noqa: F811
    store, _, _ = store_on_moto()
    start(store, "run-a", Status.PAUSED)
    start(store, "run-b")
    assert [state.run_id for state in store.runs(TENANT, Status.PAUSED.value)] == ["run-a"]
    assert [state.run_id for state in store.runs(TENANT, Status.RUNNING.value)] == ["run-b"]


def test_pending_approvals_of_every_tenant_spread_over_the_sweeps_shards(aws: None) -> None:  # noqa: F811
    store, _, _ = store_on_moto()
    approvals = [_approval(f"appr-{n}", tenant_id=f"tenant-{n % 3}") for n in range(40)]
    keys = Counter(approval_item(approval)["gsi2pk"]["S"] for approval in approvals)
    assert len(keys) == DUE_APPROVAL_SHARDS
    assert "APPROVALS#PENDING" not in keys
    for approval in approvals:
        store.commit(
            Commit(
                entry=log_entry("authorize", f"in-{approval.approval_id}"),
                tenant_id=approval.tenant_id,
                run_id=RUN,
                expected_version=None,
                approval=approval,
            )
        )
    due = store.due_approvals(ALL_PENDING_BY)
    assert sorted(a.approval_id for a in due) == sorted(a.approval_id for a in approvals)
    assert [a.expires_at for a in due] == sorted(a.expires_at for a in due)


def as_the_previous_release_wrote(item: dict[str, Any]) -> dict[str, Any]:
    """The item's format before this release: plain JSON entries, the listing in gsi1, one sweep key."""
    item = {name: value for name, value in item.items() if not name.startswith("gsi3")}
    if ENTRY_COMPRESSED in item:
        del item[ENTRY_COMPRESSED]
    if item["sk"]["S"] == "STATE":
        state = json.loads(item["state"]["S"])
        item["gsi1pk"] = {"S": f"T#{state['tenant_id']}#RUNS"}
        item["gsi1sk"] = {"S": f"{state['status']}#{state['updated_at']}#{state['run_id']}"}
    if "gsi2pk" in item:
        item["gsi2pk"] = {"S": "APPROVALS#PENDING"}
    return item


def test_items_the_previous_release_wrote_are_still_found(aws: None) -> None:  # noqa: F811
    store, dynamodb, table = store_on_moto()
    ended = workflow_state(4, run_id="run-old", status=Status.COMPLETED)
    entry = log_entry("record", "in-old", outputs=(envelope("out-old", run_id="run-old"),))
    legacy_entry = entry_item(TENANT, "run-old", entry)
    del legacy_entry[ENTRY_COMPRESSED]
    legacy_entry["entry"] = {"S": entry.model_dump_json()}
    waiting = _approval("appr-old").model_copy(update={"expires_at": T0 + timedelta(hours=1)})
    for item in (state_item(ended), legacy_entry, approval_item(waiting)):
        dynamodb.put_item(TableName=table, Item=as_the_previous_release_wrote(item))
    start(store, "run-new")

    assert {state.run_id for state in store.runs(TENANT)} == {"run-old", "run-new"}
    assert [state.run_id for state in store.runs(TENANT, Status.COMPLETED.value)] == ["run-old"]
    assert store.entries(TENANT, "run-old") == [entry]
    assert store.snapshot(TENANT, "run-old", "record", "in-old").entry == entry
    assert [a.approval_id for a in store.due_approvals(ALL_PENDING_BY)] == ["appr-old"]
    assert [a.approval_id for a in store.pending_approvals(TENANT)] == ["appr-old"]
    # decided now, it leaves the old sweep key for a new shard until it is announced
    decided = waiting.model_copy(update={"status": ApprovalStatus.APPROVED, "decided_at": T0})
    store.commit(
        Commit(
            entry=log_entry("approval", "dec-old"),
            tenant_id=TENANT,
            run_id="run-old",
            expected_version=None,
            approval=decided,
            approval_was=ApprovalStatus.PENDING,
        )
    )
    (due,) = store.due_approvals(ALL_PENDING_BY)
    assert due.status is ApprovalStatus.APPROVED
    store.mark_announced(due)
    assert store.due_approvals(ALL_PENDING_BY) == []


def test_a_log_entry_is_stored_compressed_and_smaller() -> None:
    outputs = tuple(envelope(f"out-{n}") for n in range(3))
    item = entry_item(TENANT, RUN, log_entry("decide", "in-1", outputs=outputs))
    plain = log_entry("decide", "in-1", outputs=outputs).model_dump_json().encode()
    assert len(item[ENTRY_COMPRESSED]["B"]) < len(plain) / 2
    assert item["pk"]["S"] == run_pk(TENANT, RUN)


def test_a_flood_of_parked_inputs_spreads_over_shards_and_older_ones_are_still_listed(
    aws: None,  # noqa: F811
) -> None:
    _, dynamodb, table = store_on_moto()
    parks = DynamoParkStore(table, dynamodb)
    flood = [
        Parked(
            tenant_id=f"tenant-{n % 2}",
            park_id=f"msg-{n}",
            status=ParkStatus.PARKED,
            stage="validate",
            quarantine_reason="not JSON",
            body="{",
            at=T0 + timedelta(seconds=n),
        )
        for n in range(32)
    ]
    for parked in flood:
        assert parks.create(parked)
    before = replace(flood[0], park_id="msg-old", at=T0 - timedelta(days=1))
    legacy = {
        "pk": {"S": f"T#{before.tenant_id}#REPAIR"},
        "sk": {"S": "msg-old"},
        "tenant_id": {"S": before.tenant_id},
        "at": {"S": before.at.isoformat()},
        "status": {"S": ParkStatus.PARKED.value},
        "stage": {"S": "validate"},
        "quarantine_reason": {"S": "not JSON"},
        "body": {"S": "{"},
        "gsi1pk": {"S": "REPAIRS#PARKED"},
        "gsi1sk": {"S": f"{before.at.isoformat()}#{before.tenant_id}#msg-old"},
    }
    dynamodb.put_item(TableName=table, Item=legacy)
    items = dynamodb.scan(TableName=table)["Items"]
    flooded = Counter(item["gsi1pk"]["S"] for item in items if item["sk"]["S"] in {p.park_id for p in flood})
    assert "REPAIRS#PARKED" not in flooded
    assert len(flooded) <= PARKED_SHARDS
    assert max(flooded.values()) <= len(flood) / 4  # no one key takes the flood
    listed = parks.waiting_everywhere()
    assert [parked.park_id for parked in listed] == ["msg-old", *(parked.park_id for parked in flood)]


def test_the_sweeps_one_listing_holds_exactly_what_the_index_lists_as_due(aws: None) -> None:  # noqa: F811
    """The sweep lists its index once (``ALL_PENDING_BY``) and takes as due those whose ``sweep_key`` is
    before now: the same approvals, in the same order, as the index's own ``due_approvals(now)``."""
    store, dynamodb, table = store_on_moto()
    now = T0 + timedelta(hours=2)
    pending = [
        _approval(f"appr-{n}").model_copy(update={"expires_at": now + timedelta(seconds=offset)})
        for n, offset in enumerate((-3600, -0.5, -0.000001, 0, 0.000001, 1, 3600))
    ]
    decided = [
        _approval(f"appr-dec-{n}").model_copy(
            update={"status": ApprovalStatus.APPROVED, "decided_at": now + timedelta(seconds=offset)}
        )
        for n, offset in enumerate((-60, 0, 60))
    ]
    legacy = _approval("appr-legacy").model_copy(update={"expires_at": now - timedelta(minutes=1)})
    for approval in (*pending, *decided):
        dynamodb.put_item(TableName=table, Item=approval_item(approval))
    dynamodb.put_item(TableName=table, Item=as_the_previous_release_wrote(approval_item(legacy)))

    listed = store.due_approvals(ALL_PENDING_BY)
    due_now = [a for a in listed if a.sweep_key is not None and a.sweep_key < now]
    assert due_now == store.due_approvals(now)
    assert {a.approval_id for a in due_now} == {"appr-0", "appr-1", "appr-2", "appr-dec-0", "appr-legacy"}
    assert len(listed) == len(pending) + len(decided) + 1
