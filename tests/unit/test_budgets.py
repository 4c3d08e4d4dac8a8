"""Budgets: each limit, per-tenant budgets, raised budgets, and a ping-pong stopped at its depth limit."""

from __future__ import annotations

from datetime import timedelta

import pytest

from intentbus import budgets, facts
from intentbus.catalog import Catalog
from intentbus.definition import Budget
from intentbus.envelope import Envelope
from intentbus.journal import Outcome
from intentbus.state import BudgetOverride, Status, WorkflowState, new_run
from intentbus.testing import InMemoryPipeline, VirtualClock, bus_body
from tests import pingpong_workflow
from tests.fakes import raw_body

TENANT = "acme"
RUN = "run-rally"
NOW = VirtualClock().now()


def state(**update: object) -> WorkflowState:
    run = new_run(
        tenant_id=TENANT, run_id=RUN, workflow="ping_pong", definition_version="1", step_on="Ping", now=NOW
    )
    return run.model_copy(update=update)


def serve(pipeline: InMemoryPipeline, *, run_id: str = RUN, tenant_id: str = TENANT, rally: int = 0) -> None:
    pipeline.run(
        raw_body(
            {
                "id": f"evt-{run_id}",
                "tenant_id": tenant_id,
                "run_id": run_id,
                "type": pingpong_workflow.PING,
                "payload": {"rally": rally},
            },
            detail_type=pingpong_workflow.PING,
            source="arcade.example",
        )
    )


@pytest.fixture
def pipeline() -> InMemoryPipeline:
    pingpong_workflow.agent_calls.clear()
    return InMemoryPipeline(Catalog([pingpong_workflow.workflow, pingpong_workflow.relay]))


# ---------------------------------------------------------------------- the check, limit by limit


@pytest.mark.parametrize(
    ("budget", "run", "depth", "later", "expected"),
    [
        (Budget(max_depth=4), state(), 5, 0.0, ("depth", "causation depth 5 is over the limit 4")),
        (Budget(max_steps=3), state(steps_taken=3), 0, 0.0, ("steps", "3 steps taken, the limit is 3")),
        (
            Budget(max_tokens=1000),
            state(tokens_used=1000),
            0,
            0.0,
            ("tokens", "1000 tokens used, the limit is 1000"),
        ),
        (
            Budget(deadline=timedelta(hours=1)),
            state(),
            0,
            3601.0,
            ("deadline", "the run is older than its deadline of 1:00:00"),
        ),
    ],
)
def test_each_limit_is_checked_with_the_spend(
    budget: Budget, run: WorkflowState, depth: int, later: float, expected: tuple[str, str]
) -> None:
    breach = budgets.check(budget, run, depth=depth, now=NOW + timedelta(seconds=later))
    assert breach is not None
    assert (breach.limit, breach.reason) == expected
    assert breach.spend == {
        "depth": depth,
        "steps": run.steps_taken,
        "tokens": run.tokens_used,
        "elapsed_seconds": later,
    }


def test_within_every_limit_nothing_is_crossed() -> None:
    budget = Budget(max_depth=4, max_steps=3, max_tokens=1000, deadline=timedelta(hours=1))
    run = state(steps_taken=2, tokens_used=999)
    assert budgets.check(budget, run, depth=4, now=NOW + timedelta(hours=1)) is None


def test_a_tenant_budget_replaces_the_default_and_a_raise_goes_over_both() -> None:
    relay = pingpong_workflow.relay
    assert budgets.for_tenant(relay, "acme") == Budget(max_steps=1)
    assert budgets.for_tenant(relay, "roomy") == Budget(max_steps=10)
    raised = state(
        tenant_id="roomy", budget_override=BudgetOverride(max_steps=12, deadline=timedelta(days=2))
    )
    assert budgets.for_run(relay, raised) == Budget(max_steps=12, deadline=timedelta(days=2))
    assert budgets.describe(budgets.for_run(relay, raised)) == {
        "max_depth": 16,
        "max_steps": 12,
        "max_tokens": 200_000,
        "deadline_seconds": 172_800.0,
    }


def test_a_later_raise_keeps_the_limits_an_earlier_one_raised() -> None:
    earlier = BudgetOverride(max_depth=8, max_steps=40)
    assert BudgetOverride(max_depth=12).over(earlier) == BudgetOverride(max_depth=12, max_steps=40)
    assert BudgetOverride(max_depth=12).over(None) == BudgetOverride(max_depth=12)
    assert BudgetOverride().empty
    assert not earlier.empty


def test_a_raised_budget_survives_the_state_round_trip() -> None:
    run = state(budget_override=BudgetOverride(max_tokens=5, deadline=timedelta(hours=30)))
    assert WorkflowState.model_validate_json(run.model_dump_json()) == run


def test_a_tenant_with_its_own_budget_runs_where_the_default_would_pause(pipeline: InMemoryPipeline) -> None:
    pipeline.run(
        raw_body(
            {
                "id": "evt-r",
                "tenant_id": "roomy",
                "run_id": "run-r",
                "type": "RelayStarted",
                "payload": {"leg": 0},
            },
            detail_type="RelayStarted",
        )
    )
    pipeline.run(
        raw_body(
            {
                "id": "evt-a",
                "tenant_id": TENANT,
                "run_id": "run-a",
                "type": "RelayStarted",
                "payload": {"leg": 0},
            },
            detail_type="RelayStarted",
        )
    )
    assert pipeline.store.states[("roomy", "run-r")].status is Status.COMPLETED
    paused = pipeline.store.states[(TENANT, "run-a")]
    assert (paused.status, paused.reason) == (Status.PAUSED, "1 steps taken, the limit is 1")


# ---------------------------------------------------------------------- ping-pong


def test_ping_pong_stops_at_the_depth_limit_paused_for_review_with_its_spend(
    pipeline: InMemoryPipeline,
) -> None:
    serve(pipeline)

    limit = pingpong_workflow.MAX_DEPTH
    decided = limit + 1  # depths 0..limit are decided; the event at limit + 1 pauses the run
    run = pipeline.store.states[(TENANT, RUN)]
    assert run.status is Status.PAUSED
    assert run.reason == f"causation depth {decided} is over the limit {limit}"
    assert (run.steps_taken, run.tokens_used, run.max_depth) == (
        decided,
        decided * pingpong_workflow.TOKENS_PER_CALL,
        limit,
    )
    assert run.pending == ()
    assert pingpong_workflow.agent_calls == [
        f"{'ponger' if rally % 2 == 0 else 'pinger'}:{RUN}:{rally}" for rally in range(decided)
    ]

    entries = pipeline.store.entries(TENANT, RUN)
    assert [(e.stage, e.outcome) for e in entries] == [
        ("validate", Outcome.APPLIED),  # the serve; each outcome goes from record straight to decide
        *[(stage, Outcome.APPLIED) for _ in range(decided) for stage in ("decide", "authorize", "record")],
        ("decide", Outcome.PAUSED),
    ]
    assert [e.input_type for e in entries if e.stage == "validate"] == ["Ping"]
    assert [e.input_type for e in entries if e.stage == "decide"] == ["Ping", "Pong"] * 3
    pause = entries[-1]
    spend = {
        "depth": decided,
        "steps": decided,
        "tokens": decided * pingpong_workflow.TOKENS_PER_CALL,
        "elapsed_seconds": 0.0,
    }
    assert pause.summary["limit"] == "depth"
    assert pause.summary["spend"] == spend
    assert pause.summary["budget"]["max_depth"] == limit
    assert pause.summary["event"]["type"] == "Pong"
    assert pause.summary["event"]["depth"] == decided

    (review,) = [e for e in pipeline.bus.published if e.type == facts.HUMAN_REVIEW_REQUIRED]
    assert review.payload == {"reason": run.reason, "limit": "depth", "spend": spend}
    assert review.version == run.version
    assert pause.outputs == (review,)
    assert pipeline.bus.published[-1] == review


def test_nothing_more_is_decided_after_the_pause(pipeline: InMemoryPipeline) -> None:
    serve(pipeline)
    paused = pipeline.store.states[(TENANT, RUN)]
    calls = list(pingpong_workflow.agent_calls)
    outcomes = [e for e in pipeline.bus.published if e.source == facts.WORKFLOW_SOURCE]

    again = pipeline.deliver("decide", bus_body(outcomes[-1]))  # the paused input, redelivered
    assert again.outcome is Outcome.DUPLICATE
    assert [e.type for e in again.published] == [facts.HUMAN_REVIEW_REQUIRED]
    serve(pipeline)  # the first serve, sent again
    last = Envelope.model_validate(pipeline.store.entries(TENANT, RUN)[-1].summary["event"])
    other = last.model_copy(update={"id": "evt-another-pong", "source": "arcade.example"})
    pipeline.run(raw_body(other.to_json_dict(), detail_type=other.type, source="arcade.example"))

    assert pingpong_workflow.agent_calls == calls
    assert pipeline.store.states[(TENANT, RUN)] == paused
    stale = [e for e in pipeline.store.entries(TENANT, RUN) if e.outcome is Outcome.STALE]
    assert [e.summary["reason"] for e in stale] == ["the run is PAUSED"]
