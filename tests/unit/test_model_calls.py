"""The decision is recorded before CommandProposed is published, and a redelivery reuses it: one model
call per decided event, under duplicate delivery, a crash after the record, and a write retried."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.stub import Stubber

from intentbus import facts
from intentbus.adapters.bedrock_agent import BedrockModels, Converse
from intentbus.catalog import Catalog
from intentbus.definition import (
    Decision,
    DecisionContext,
    ModelAgent,
    ProposedCommand,
    ScriptedAgent,
    Step,
    Workflow,
)
from intentbus.journal import Commit, CommitResult, CommitStatus, Outcome
from intentbus.stages.decide import DecideStage
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline, InMemoryStore, bus_body, route
from tests.fakes import raw_body
from tests.unit import sample_workflow
from tests.unit.test_bedrock_agent import converse_for, converse_response, stubbed_client, tool_use

TENANT = "acme"
CALLS: list[str] = []


def _reserve(context: DecisionContext) -> Decision:
    CALLS.append(context.event_type)
    event = context.event
    assert isinstance(event, sample_workflow.OrderPlaced)
    payload = {"order_id": event.order_id, "amount": event.amount}
    return Decision(
        agent="clerk",
        rationale="reserve",
        confidence=1.0,
        commands=(ProposedCommand(type="reserve", payload=payload),),
    )


def _ship(context: DecisionContext) -> Decision:
    CALLS.append(context.event_type)
    event = context.event
    assert isinstance(event, sample_workflow.OrderReserved)
    return Decision(
        agent="clerk",
        rationale="ship",
        confidence=1.0,
        commands=tuple(
            ProposedCommand(type="ship", payload={"order_id": event.order_id, "warehouse": w})
            for w in ("north", "south")
        ),
    )


def orders_workflow() -> Workflow:
    """The sample workflow with model agents: scripted (and counted) when no model is bound."""
    base = sample_workflow.workflow
    workflow = Workflow(name="orders", version="1", budget=base.budget, policy=base.policy)
    workflow.events = dict(base.events)
    workflow.starts_on = set(base.starts_on)
    workflow.commands = dict(base.commands)
    workflow.step(
        Step(
            on="OrderPlaced",
            agent=ModelAgent(
                "clerk", "Reserve the order's stock.", fallback=ScriptedAgent("clerk", _reserve)
            ),
            outcome="OrderReserved",
        )
    )
    shipped = base.steps["OrderReserved"]
    workflow.step(
        Step(
            on="OrderReserved",
            agent=ModelAgent("clerk", "Ship the order.", fallback=ScriptedAgent("clerk", _ship)),
            outcome="OrderShipped",
            final=True,
            outcome_payload=shipped.outcome_payload,
        )
    )
    return workflow


WORKFLOW = orders_workflow()


def order(order_id: str = "o-1") -> str:
    detail = {
        "id": f"evt-{order_id}",
        "tenant_id": TENANT,
        "run_id": f"run-{order_id}",
        "type": "OrderPlaced",
        "payload": {"order_id": order_id, "amount": 3},
    }
    return raw_body(detail, detail_type="OrderPlaced", source="shop.example")


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    CALLS.clear()
    sample_workflow.RUNS.clear()
    yield
    CALLS.clear()


def accepted(pipeline: InMemoryPipeline) -> str:
    (envelope,) = pipeline.deliver("validate", order()).published
    return bus_body(envelope)


def test_a_duplicate_delivery_reuses_the_recorded_decision() -> None:
    pipeline = InMemoryPipeline(Catalog([WORKFLOW]))
    body = accepted(pipeline)
    first = pipeline.deliver("decide", body)
    again = pipeline.deliver("decide", body)
    assert (first.outcome, again.outcome) == (Outcome.APPLIED, Outcome.DUPLICATE)
    assert again.published == first.published
    assert CALLS == ["OrderPlaced"]


def test_a_crash_after_the_record_republishes_the_recorded_decision() -> None:
    pipeline = InMemoryPipeline(Catalog([WORKFLOW]))
    body = accepted(pipeline)
    pipeline.bus.fail_next = 1  # the decision is recorded; publishing it fails: the process dies here
    with pytest.raises(ConnectionError):
        pipeline.deliver("decide", body)
    entry = pipeline.store.entries(TENANT, "run-o-1")[-1]
    assert (entry.stage, entry.summary["decision"]["agent"]) == ("decide", "clerk")
    retried = pipeline.deliver("decide", body)
    assert retried.outcome is Outcome.DUPLICATE
    assert retried.published == entry.outputs
    assert CALLS == ["OrderPlaced"]


@dataclass
class ConflictOnce(InMemoryStore):
    """Another writer moves the run once, between decide's read and its write."""

    conflicts: int = 1

    def commit(self, commit: Commit) -> CommitResult:
        if commit.entry.stage == "decide" and self.conflicts:
            self.conflicts -= 1
            self.calls += 1
            return CommitResult(CommitStatus.VERSION_CONFLICT)
        return super().commit(commit)


def test_a_write_retried_after_a_version_conflict_reuses_the_decision() -> None:
    pipeline = InMemoryPipeline(Catalog([WORKFLOW]), store=ConflictOnce())
    assert pipeline.deliver("decide", accepted(pipeline)).outcome is Outcome.APPLIED
    assert CALLS == ["OrderPlaced"]


@dataclass
class Redelivering:
    """Delivers every message twice, and makes every decide publish fail once after its record."""

    pipeline: InMemoryPipeline
    crashed: set[str] = field(default_factory=set)
    crashes: int = 0

    def run(self, body: str) -> None:
        queue: deque[tuple[str, str]] = deque([("validate", body)])
        while queue:
            stage, item = queue.popleft()
            if stage == "decide" and item not in self.crashed:
                self.crashed.add(item)
                self.pipeline.bus.fail_next = 1  # it dies after its record, if it records anything to publish
                try:
                    self.pipeline.deliver(stage, item)
                except ConnectionError:
                    self.crashes += 1
                self.pipeline.bus.fail_next = 0
            for _ in range(2):
                for envelope in self.pipeline.deliver(stage, item).published:
                    target = route(envelope)
                    if target is not None:
                        queue.append((target, bus_body(envelope)))


def test_one_call_per_decided_event_through_the_whole_pipeline_under_duplicates_and_crashes() -> None:
    pipeline = InMemoryPipeline(Catalog([WORKFLOW]))
    harness = Redelivering(pipeline)
    harness.run(order())
    assert harness.crashes == 2  # after recording the decision on OrderPlaced, and on OrderReserved
    assert pipeline.store.states[(TENANT, "run-o-1")].status is Status.COMPLETED
    assert CALLS == ["OrderPlaced", "OrderReserved"]
    assert sorted(sample_workflow.RUNS) == ["reserve:o-1", "ship:o-1:north", "ship:o-1:south"]


def test_one_bedrock_call_per_decided_event_under_duplicates_and_crashes() -> None:
    client = stubbed_client()
    pipeline = InMemoryPipeline(Catalog([WORKFLOW]))
    converse: Converse = converse_for(client)
    pipeline.stages["decide"] = DecideStage(pipeline.deps, pipeline.store, models=BedrockModels(converse))
    ship: list[dict[str, Any]] = [
        tool_use("ship", {"order_id": "o-1", "warehouse": w}, tool_use_id=f"tooluse_{w}")
        for w in ("north", "south")
    ]
    with Stubber(client) as stubber:  # exactly two answers: a third call would fail the test
        stubber.add_response(
            "converse", converse_response([tool_use("reserve", {"order_id": "o-1", "amount": 3})])
        )
        stubber.add_response("converse", converse_response(ship))
        harness = Redelivering(pipeline)
        harness.run(order())
        stubber.assert_no_pending_responses()
    assert harness.crashes == 2
    assert converse.calls == 2
    assert CALLS == []  # the scripted fallbacks were never asked
    assert pipeline.store.states[(TENANT, "run-o-1")].status is Status.COMPLETED
    decided = [
        e
        for e in pipeline.store.entries(TENANT, "run-o-1")
        if e.stage == "decide" and "decision" in e.summary
    ]
    assert [e.summary["decision"]["model"] for e in decided] == [
        "anthropic.claude-3-5-haiku-20241022-v1:0"
    ] * 2
    proposed = {e.id for e in pipeline.bus.published if e.type == facts.COMMAND_PROPOSED}
    assert len(proposed) == 3  # reserve, and ship to two warehouses: republished with the same ids


@dataclass
class FailOnce(InMemoryStore):
    """Decide's first write fails before it reached the table: nothing was recorded."""

    failures: int = 1

    def commit(self, commit: Commit) -> CommitResult:
        if commit.entry.stage == "decide" and self.failures:
            self.failures -= 1
            raise ConnectionError("DynamoDB unreachable")
        return super().commit(commit)


def test_a_failed_record_reuses_the_unrecorded_decision_in_a_warm_stage() -> None:
    """The answer was never recorded: the same (warm) stage keeps it and records it on the retry."""

    pipeline = InMemoryPipeline(Catalog([WORKFLOW]), store=FailOnce())
    body = accepted(pipeline)
    with pytest.raises(ConnectionError):
        pipeline.deliver("decide", body)
    assert pipeline.deliver("decide", body).outcome is Outcome.APPLIED
    assert CALLS == ["OrderPlaced"]
    assert len([e for e in pipeline.store.entries(TENANT, "run-o-1") if e.stage == "decide"]) == 1


def test_a_crash_before_the_record_on_a_cold_stage_asks_again_as_nothing_was_decided() -> None:
    """The only case with a second call: a fresh container never saw the first, unrecorded answer."""

    pipeline = InMemoryPipeline(Catalog([WORKFLOW]), store=FailOnce())
    body = accepted(pipeline)
    with pytest.raises(ConnectionError):
        pipeline.deliver("decide", body)
    cold = InMemoryPipeline(Catalog([WORKFLOW]), store=pipeline.store, bus=pipeline.bus)
    assert cold.deliver("decide", body).outcome is Outcome.APPLIED
    assert CALLS == ["OrderPlaced", "OrderPlaced"]
    assert len([e for e in pipeline.store.entries(TENANT, "run-o-1") if e.stage == "decide"]) == 1
