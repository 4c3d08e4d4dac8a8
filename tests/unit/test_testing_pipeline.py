"""intentbus.testing as a user's test drives it: emit, run until idle, look at the run, decide approvals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from intentbus.approvals import Answer
from intentbus.definition import (
    Decision,
    DecisionContext,
    ProposedCommand,
    RepeatSafety,
    ScriptedAgent,
    Step,
    ToolContext,
    Workflow,
    tool,
)
from intentbus.policy import Effect, Policy, Rule
from intentbus.registry import Payload
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline, MissingClient, TimelineEntry, VirtualClock
from tests.unit import sample_workflow

TENANT = "acme"


def order(order_id: str = "o-1", amount: Any = 3, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"evt-{order_id}",
        "tenant_id": TENANT,
        "run_id": f"run-{order_id}",
        "type": "OrderPlaced",
        "payload": {"order_id": order_id, "amount": amount},
        **extra,
    }


pytestmark = pytest.mark.usefixtures("sample_runs_cleared")


@pytest.fixture
def pipeline() -> InMemoryPipeline:
    return InMemoryPipeline([sample_workflow.workflow])


@pytest.fixture
def production() -> InMemoryPipeline:
    """Shipping needs a person's approval in production."""
    return InMemoryPipeline([sample_workflow.workflow], environment="production")


def test_an_emitted_event_runs_to_completion_and_each_tool_is_counted(pipeline: InMemoryPipeline) -> None:
    pipeline.emit(order())
    assert pipeline.state(TENANT, "run-o-1") is None, "nothing runs before run_until_idle"

    pipeline.run_until_idle()

    state = pipeline.state(TENANT, "run-o-1")
    assert state is not None
    assert state.status is Status.COMPLETED
    assert pipeline.tool_runs == Counter({"reserve": 1, "ship": 2})
    steps = [entry.step for entry in pipeline.timeline(TENANT, "run-o-1")]
    assert steps[:4] == [
        ("validate", "OrderPlaced", "applied"),
        ("decide", "OrderPlaced", "applied"),
        ("authorize", "reserve", "applied"),
        ("record", "CommandExecuted", "applied"),
    ]
    # record's last entry publishes OrderShipped, which ends the run: no stage is sent it
    assert steps[-1] == ("record", "CommandExecuted", "applied")
    assert ("decide", "OrderShipped", "applied") not in steps
    assert pipeline.quarantined == []


def test_the_same_event_twice_runs_no_tool_again(pipeline: InMemoryPipeline) -> None:
    pipeline.emit(order())
    pipeline.emit(order())
    pipeline.run_until_idle()
    assert pipeline.tool_runs == Counter({"reserve": 1, "ship": 2})
    assert ("validate", "duplicate") in pipeline.outcomes


def test_a_cloudevent_from_its_own_source_starts_a_run(pipeline: InMemoryPipeline) -> None:
    pipeline.emit(
        {
            "specversion": "1.0",
            "id": "ce-1",
            "source": "shop.example",
            "type": "OrderPlaced",
            "tenantid": TENANT,
            "runid": "run-ce",
            "data": {"order_id": "ce", "amount": 1},
        }
    )
    pipeline.run_until_idle()
    state = pipeline.state(TENANT, "run-ce")
    assert state is not None
    assert state.status is Status.COMPLETED
    assert [run.run_id for run in pipeline.runs(TENANT)] == ["run-ce"]


def test_the_timeline_is_ordered_by_time_as_the_clock_moves() -> None:
    clock = VirtualClock()
    pipeline = InMemoryPipeline([sample_workflow.workflow], clock=clock)
    pipeline.emit(order("o-1"))
    pipeline.run_until_idle()
    clock.advance(60)
    pipeline.emit(order("o-1", amount=3) | {"id": "evt-again"})
    pipeline.run_until_idle()
    times = [entry.at for entry in pipeline.timeline(TENANT, "run-o-1")]
    assert times == sorted(times)
    assert times[-1] - times[0] == clock.now() - times[0]
    assert isinstance(pipeline.timeline(TENANT, "run-o-1")[0], TimelineEntry)


def test_a_malformed_input_is_quarantined_with_its_reason_and_field(pipeline: InMemoryPipeline) -> None:
    pipeline.emit(order(amount="many"))
    pipeline.run_until_idle()

    (refused,) = pipeline.quarantined
    assert (refused.stage, refused.field) == ("validate", "payload.amount")
    assert "integer" in refused.reason
    assert pipeline.state(TENANT, "run-o-1") is None
    assert pipeline.tool_runs == Counter()


def test_a_source_bound_to_other_tenants_is_quarantined() -> None:
    pipeline = InMemoryPipeline([sample_workflow.workflow], producers="shop.example=globex")
    pipeline.emit(order(source="shop.example"))
    pipeline.run_until_idle()
    (refused,) = pipeline.quarantined
    assert "not bound to tenant 'acme'" in refused.reason
    assert pipeline.tool_runs == Counter()


def test_approving_resumes_the_run_and_runs_the_tool(production: InMemoryPipeline) -> None:
    production.emit(order())
    production.run_until_idle()
    state = production.state(TENANT, "run-o-1")
    assert state is not None
    assert state.status is Status.AWAITING_APPROVAL
    waiting = production.pending_approvals(TENANT)
    assert [approval.command.type for approval in waiting] == ["ship", "ship"]
    assert production.tool_runs == Counter({"reserve": 1})

    for approval in waiting:
        result = production.approve(approval.approval_id, approver="alice", reason="stock checked")
        assert (result.answer, result.reason) == (Answer.APPROVED, "approved by alice: stock checked")
    production.run_until_idle()

    state = production.state(TENANT, "run-o-1")
    assert state is not None
    assert state.status is Status.COMPLETED
    assert production.tool_runs == Counter({"reserve": 1, "ship": 2})
    assert production.pending_approvals(TENANT) == []
    steps = [entry.step for entry in production.timeline(TENANT, "run-o-1")]
    assert steps.count(("authorize", "ship", "waiting")) == 2
    assert steps.count(("approval", "ship", "applied")) == 2


def test_rejecting_denies_the_command_and_runs_no_tool(production: InMemoryPipeline) -> None:
    production.emit(order())
    production.run_until_idle()
    first, _ = production.pending_approvals(TENANT)

    assert production.reject(first.approval_id, reason="not today").answer is Answer.REJECTED
    production.run_until_idle()

    state = production.state(TENANT, "run-o-1")
    assert state is not None
    assert state.status is Status.DENIED
    assert production.tool_runs["ship"] == 0


def test_an_unknown_approval_is_not_found(production: InMemoryPipeline) -> None:
    assert production.approve("apr-nope").answer is Answer.NOT_FOUND


def test_advancing_the_clock_expires_an_approval(production: InMemoryPipeline) -> None:
    production.emit(order())
    production.run_until_idle()
    first, _ = production.pending_approvals(TENANT)

    production.clock.advance(sample_workflow.workflow.approval_timeout.total_seconds() - 1)
    production.run_until_idle()
    assert len(production.pending_approvals(TENANT)) == 2, "not yet"

    production.clock.advance(2)
    production.run_until_idle()

    assert production.pending_approvals(TENANT) == []
    state = production.state(TENANT, "run-o-1")
    assert state is not None
    assert state.status is Status.DENIED  # the workflow's on_approval_expiry: cancel
    assert production.approve(first.approval_id).answer is Answer.EXPIRED
    assert production.tool_runs["ship"] == 0


class Lookup(Payload):
    key: str


class Asked(Payload):
    key: str


class Answered(Payload):
    value: str


@tool(repeat_safety=RepeatSafety.SAFE)
def read_parameter(command: Lookup, context: ToolContext) -> Mapping[str, Any]:
    ssm = context.clients.client("ssm")
    return {"value": ssm.get_parameter(Name=command.key)["Parameter"]["Value"]}


def _lookup(context: DecisionContext) -> Decision:
    assert isinstance(context.event, Asked)
    return Decision(
        agent="clerk",
        rationale="look it up",
        confidence=1.0,
        commands=(ProposedCommand(type="read_parameter", payload={"key": context.event.key}),),
    )


def lookup_workflow() -> Workflow:
    workflow = Workflow(
        name="lookup",
        version="1",
        policy=Policy(rules=(Rule(id="reads", command="read_parameter", effect=Effect.ALLOW),)),
    )
    workflow.event("Asked", Asked, starts=True)
    workflow.event("Answered", Answered)
    workflow.command("read_parameter", Lookup, tool=read_parameter)
    workflow.step(
        Step(
            on="Asked",
            agent=ScriptedAgent("clerk", _lookup),
            outcome="Answered",
            final=True,
            outcome_payload=lambda results: {"value": next(iter(results.values()))["value"]},
        )
    )
    return workflow


class FakeSsm:
    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = values

    def get_parameter(self, *, Name: str) -> dict[str, Any]:
        return {"Parameter": {"Name": Name, "Value": self.values[Name]}}


def asked(key: str) -> dict[str, Any]:
    return {
        "id": f"ask-{key}",
        "tenant_id": TENANT,
        "run_id": "run-ask",
        "type": "Asked",
        "payload": {"key": key},
    }


def test_a_tool_uses_the_clients_the_test_injects() -> None:
    pipeline = InMemoryPipeline([lookup_workflow()], clients={"ssm": FakeSsm({"/shop/mode": "busy"})})
    pipeline.emit(asked("/shop/mode"))
    pipeline.run_until_idle()
    answered = [envelope for envelope in pipeline.published if envelope.type == "Answered"]
    assert [envelope.payload for envelope in answered] == [{"value": "busy"}]


def test_clients_set_after_construction_reach_the_tools() -> None:
    pipeline = InMemoryPipeline([lookup_workflow()])  # as the intentbus_pipeline fixture makes it
    pipeline.clients = {"ssm": FakeSsm({"/shop/mode": "calm"})}
    pipeline.emit(asked("/shop/mode"))
    pipeline.run_until_idle()
    assert [e.payload for e in pipeline.published if e.type == "Answered"] == [{"value": "calm"}]


def test_a_client_the_test_did_not_give_fails_the_test_naming_the_service() -> None:
    pipeline = InMemoryPipeline([lookup_workflow()])
    pipeline.emit(asked("/shop/mode"))
    with pytest.raises(MissingClient, match="a tool asked for a 'ssm' client; the test gave none"):
        pipeline.run_until_idle()
