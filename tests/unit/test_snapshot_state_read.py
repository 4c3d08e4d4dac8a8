"""A snapshot read from DynamoDB reads its run's state JSON only when the state is asked for: validate's
retired-run check is told by the status, workflow and definition version its state item holds beside the
state (written in the same put), and gives the same answer the state would."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import pytest
from pydantic import ValidationError

from intentbus.adapters.dynamodb_store import snapshot_of, state_from_item, state_item
from intentbus.journal import Snapshot
from intentbus.ports import SnapshotRequest
from intentbus.stages.common import StageDeps
from intentbus.stages.retired import why_retired, why_snapshot_retired
from intentbus.state import Status, WorkflowState

T0 = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
REQUEST = SnapshotRequest("acme", "run-1", "validate", "in-1", None, (), None)


def state(status: Status = Status.RUNNING, *, workflow: str = "orders", version: str = "1") -> WorkflowState:
    return WorkflowState(
        tenant_id="acme",
        run_id="run-1",
        workflow=workflow,
        definition_version=version,
        status=status,
        version=3,
        step_index=1,
        step_on="OrderPlaced",
        started_at=T0,
        updated_at=T0,
    )


def deps(**registered: str) -> StageDeps:
    """Deps whose catalog registers ``workflow=version`` pairs (only ``retired`` is asked)."""
    from intentbus.catalog import Catalog

    catalog = SimpleNamespace(
        workflows={name: SimpleNamespace(version=version) for name, version in registered.items()}
    )
    catalog.retired = lambda workflow, definition: Catalog.retired(cast(Any, catalog), workflow, definition)
    return cast(StageDeps, SimpleNamespace(catalog=catalog))


def test_the_state_read_later_is_the_state_read_now_and_the_snapshots_are_equal() -> None:
    item = state_item(state())
    lazy = snapshot_of(REQUEST, [item])
    eager = Snapshot(state_from_item(item), None, None, {}, None)
    assert "state" not in lazy.__dict__
    assert lazy.state == state()
    assert lazy == eager
    assert repr(lazy) == repr(eager)


def test_the_retired_check_reads_no_state_when_the_item_says_the_run() -> None:
    item = state_item(state(workflow="orders", version="1")) | {"state": {"S": "not the state's JSON"}}
    snapshot = snapshot_of(REQUEST, [item])
    assert why_snapshot_retired(deps(orders="2"), snapshot) == (
        "the run started under version '1' of workflow 'orders'; this deployment has version '2' only"
    )
    assert why_snapshot_retired(deps(orders="1"), snapshot) is None
    with pytest.raises(ValidationError):  # the state itself is read only when asked for
        _ = snapshot.state


@pytest.mark.parametrize("status", list(Status))
@pytest.mark.parametrize("registered", [{"orders": "1"}, {"orders": "2"}, {}])
@pytest.mark.parametrize("legacy", [False, True])
def test_the_retired_check_of_a_snapshot_is_the_states(
    status: Status, registered: dict[str, str], legacy: bool
) -> None:
    """The item's own attributes give the answer the state gives; an item without them all (``legacy``:
    written before they were) is told by its state."""
    run = state(status)
    item = state_item(run)
    if legacy:
        del item["definition"]
    snapshot = snapshot_of(REQUEST, [item])
    assert why_snapshot_retired(deps(**registered), snapshot) == why_retired(deps(**registered), run)
    assert ("state" in snapshot.__dict__) is legacy


def test_no_run_is_no_retired_run() -> None:
    snapshot = snapshot_of(REQUEST, [])
    assert snapshot.state is None
    assert why_snapshot_retired(deps(), snapshot) is None
