"""The five stage cores together, in memory: outcomes, dedup, staleness, policy and budgets."""

from __future__ import annotations

import json

import pytest

from intentbus.catalog import Catalog
from intentbus.envelope import Envelope
from intentbus.extensions import RUN_ENDED
from intentbus.journal import Outcome
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline, bus_body
from tests.fakes import raw_body
from tests.unit import sample_workflow

TENANT = "acme"


@pytest.fixture
def pipeline() -> InMemoryPipeline:
    sample_workflow.RUNS.clear()
    return InMemoryPipeline(Catalog([sample_workflow.workflow]))


def order(order_id: str = "o-1", amount: int = 3, **extra: object) -> str:
    detail = {
        "id": f"evt-{order_id}",
        "tenant_id": TENANT,
        "run_id": f"run-{order_id}",
        "type": "OrderPlaced",
        "payload": {"order_id": order_id, "amount": amount},
        **extra,
    }
    return raw_body(detail, detail_type="OrderPlaced", source="shop.example")


def test_a_run_travels_every_stage_and_completes(pipeline: InMemoryPipeline) -> None:
    pipeline.run(order())

    state = pipeline.store.states[(TENANT, "run-o-1")]
    assert state.status is Status.COMPLETED
    assert sorted(sample_workflow.RUNS) == ["reserve:o-1", "ship:o-1:north", "ship:o-1:south"]
    assert {stage for stage, outcome in pipeline.outcomes if outcome == "applied"} == {
        "validate",
        "decide",
        "authorize",
        "execute",
        "record",
    }
    stages = [entry.stage for entry in pipeline.store.entries(TENANT, "run-o-1")]
    # execute writes no log entry of its own: record logs the outcome it published
    assert stages[:4] == ["validate", "decide", "authorize", "record"]
    # OrderPlaced and OrderReserved: OrderShipped ends the run, marked so, and is sent to no stage
    assert stages.count("decide") == 2
    shipped = [e for e in pipeline.bus.published if e.type == "OrderShipped"]
    assert shipped[0].payload == {"order_id": "o-1", "parcels": ["north-o-1", "south-o-1"]}
    assert shipped[0].depth == 2
    assert shipped[0].extensions == {RUN_ENDED: True}
    reserved = [e for e in pipeline.bus.published if e.type == "OrderReserved"]
    assert RUN_ENDED not in reserved[0].extensions


def test_duplicate_delivery_republishes_the_same_ids_and_runs_tools_once(pipeline: InMemoryPipeline) -> None:
    body = order()
    first = pipeline.deliver("validate", body)
    again = pipeline.deliver("validate", body)
    assert again.outcome is Outcome.DUPLICATE
    assert [e.model_dump() for e in again.published] == [e.model_dump() for e in first.published]

    pipeline.run(body)
    pipeline.run(body)
    assert sorted(sample_workflow.RUNS) == ["reserve:o-1", "ship:o-1:north", "ship:o-1:south"]


def test_a_stage_that_crashed_after_recording_publishes_identical_output(pipeline: InMemoryPipeline) -> None:
    accepted = pipeline.deliver("validate", order()).published[0]
    pipeline.bus.fail_next = 1
    with pytest.raises(ConnectionError):
        pipeline.deliver("decide", bus_body(accepted))
    retried = pipeline.deliver("decide", bus_body(accepted))
    assert retried.outcome is Outcome.DUPLICATE
    recorded = pipeline.store.entries(TENANT, "run-o-1")[-1]
    assert retried.published == recorded.outputs


def test_malformed_input_is_quarantined_with_a_reason_naming_the_field(pipeline: InMemoryPipeline) -> None:
    missing_tenant = raw_body(
        {"type": "OrderPlaced", "payload": {"order_id": "x", "amount": 1}}, detail_type="OrderPlaced"
    )
    wrong_type = order(amount="many")  # type: ignore[arg-type]
    for body in (missing_tenant, wrong_type, "{not json"):
        assert pipeline.deliver("validate", body).outcome is Outcome.QUARANTINED
    reasons = [record["reason"] for record in pipeline.quarantine.records]
    assert reasons[0].startswith("tenant_id: Field required")
    assert reasons[1].startswith("payload.amount: Input should be a valid integer")
    assert reasons[2].startswith("body is not JSON")
    assert pipeline.bus.published == []


def test_unknown_type_and_spoofed_pipeline_facts_are_quarantined(pipeline: InMemoryPipeline) -> None:
    unknown = raw_body({"tenant_id": TENANT, "payload": {}}, detail_type="Nope")
    spoof = raw_body({"tenant_id": TENANT, "payload": {}}, detail_type="CommandAuthorized")
    assert (
        pipeline.deliver("validate", unknown).reason
        == "unknown type 'Nope': no registered workflow declares it"
    )
    assert "pipeline fact" in str(pipeline.deliver("validate", spoof).reason)


def test_policy_denies_past_its_limit_and_the_run_ends_denied(pipeline: InMemoryPipeline) -> None:
    pipeline.run(order(amount=500))
    state = pipeline.store.states[(TENANT, "run-o-1")]
    assert state.status is Status.DENIED
    assert state.reason == "amount=500 is above the maximum 100 of rule reserve-small"
    assert sample_workflow.RUNS == []


def test_a_failing_tool_fails_the_run_without_retrying(pipeline: InMemoryPipeline) -> None:
    pipeline.run(order("broken"))
    assert pipeline.store.states[(TENANT, "run-broken")].status is Status.FAILED
    assert sample_workflow.RUNS == ["reserve:broken"]


def test_approval_required_leaves_a_pending_approval_and_stops() -> None:
    sample_workflow.RUNS.clear()
    pipeline = InMemoryPipeline(Catalog([sample_workflow.workflow]), environment="production")
    pipeline.run(order())
    state = pipeline.store.states[(TENANT, "run-o-1")]
    assert state.status is Status.AWAITING_APPROVAL
    approvals = list(pipeline.store.approvals.values())
    assert sorted(approval.command.payload["warehouse"] for approval in approvals) == ["north", "south"]
    assert all(a.expires_at - a.requested_at == sample_workflow.workflow.approval_timeout for a in approvals)
    assert {(a.proposed_by, a.confidence, a.rationale) for a in approvals} == {
        ("clerk", 1.0, "ship from two warehouses")
    }
    assert [e.type for e in pipeline.bus.published].count("HumanApprovalRequired") == 2
    assert sample_workflow.RUNS == ["reserve:o-1"]


def test_an_event_from_an_earlier_step_is_recorded_stale_not_applied(pipeline: InMemoryPipeline) -> None:
    pipeline.run(order())
    late = Envelope.model_validate(
        json.loads(order())["detail"]
        | {
            "source": "shop.example",
            "time": "2026-12-01T09:00:00Z",
            "kind": "event",
            "trace_id": "t",
            "correlation_id": "c",
            "step_index": 0,
            "id": "evt-late",
            "type": "OrderReserved",
            "payload": {"order_id": "o-1", "reserved": 1},
        }
    )
    result = pipeline.deliver(
        "validate", raw_body(late.to_json_dict(), detail_type="OrderReserved", source="shop.example")
    )
    stale = pipeline.deliver("decide", bus_body(result.published[0]))
    assert stale.outcome is Outcome.STALE
    assert pipeline.store.states[(TENANT, "run-o-1")].status is Status.COMPLETED


def test_depth_over_budget_pauses_for_human_review(pipeline: InMemoryPipeline) -> None:
    pipeline.run(order(depth=9))
    state = pipeline.store.states[(TENANT, "run-o-1")]
    assert state.status is Status.PAUSED
    assert state.reason == "causation depth 9 is over the limit 4"
    assert [e.type for e in pipeline.bus.published][-1] == "HumanReviewRequired"
