"""A redeploy that drops a workflow or registers a new version of it, with runs in flight, in memory.

Wherever a run's next fact waits when the deployment changes, the stage that takes it ends the run
FAILED with the reason, once the fact checks out against the record; a forged copy ends nothing.
"""

from __future__ import annotations

import dataclasses
import json
from collections import deque
from datetime import timedelta

import pytest

from intentbus import facts
from intentbus.approvals import EXPIRY_FAILS, Answer, Approver
from intentbus.catalog import Catalog
from intentbus.definition import Workflow
from intentbus.errors import NOT_RECORDED
from intentbus.journal import Outcome
from intentbus.state import Status, WorkflowState
from intentbus.testing import InMemoryPipeline, bus_body, route
from tests.fakes import raw_body
from tests.unit import sample_workflow

TENANT = "acme"
RUN = "run-o-1"
REMOVED = "workflow 'orders' is not registered in this deployment"
REPLACED = "the run started under version '1' of workflow 'orders'; this deployment has version '2' only"
Queue = deque[tuple[str, str]]

# Where the run's next fact waits when the deployment changes: (stage, the fact's detail-type).
IN_FLIGHT = {
    "decide": "OrderReserved",  # record's domain event, straight to decide
    "authorize": facts.COMMAND_PROPOSED,
    "execute": facts.COMMAND_AUTHORIZED,
    "record": facts.COMMAND_EXECUTED,
}


def order(order_id: str = "o-1") -> str:
    detail = {
        "id": f"evt-{order_id}",
        "tenant_id": TENANT,
        "run_id": f"run-{order_id}",
        "type": "OrderPlaced",
        "payload": {"order_id": order_id, "amount": 3},
    }
    return raw_body(detail, detail_type="OrderPlaced", source="shop.example")


def version_2() -> Workflow:
    return dataclasses.replace(sample_workflow.workflow, version="2")


def redeployed(pipeline: InMemoryPipeline, *workflows: Workflow) -> InMemoryPipeline:
    """The same table, bus and clock, with the stages of a deployment that registers ``workflows``."""
    return InMemoryPipeline(
        Catalog(workflows),
        environment=pipeline.environment,
        store=pipeline.store,
        bus=pipeline.bus,
        quarantine=pipeline.quarantine,
        clock=pipeline.clock,
        runner=pipeline.runner,
    )


def until(pipeline: InMemoryPipeline, body: str, stage: str, detail_type: str) -> Queue:
    """Runs the pipeline until a fact of the run of that type waits for ``stage``; returns what waits."""
    waiting: Queue = deque([("validate", body)])
    while waiting:
        target, item = waiting[0]
        started = (TENANT, RUN) in pipeline.store.states
        if started and target == stage and json.loads(item)["detail-type"] == detail_type:
            return waiting
        waiting.popleft()
        for envelope in pipeline.deliver(target, item).published:
            routed = route(envelope)
            if routed is not None:
                waiting.append((routed, bus_body(envelope)))
    raise AssertionError(f"the run never waited at {stage} with {detail_type}")


def drain(pipeline: InMemoryPipeline, waiting: Queue) -> None:
    while waiting:
        target, item = waiting.popleft()
        for envelope in pipeline.deliver(target, item).published:
            routed = route(envelope)
            if routed is not None:
                waiting.append((routed, bus_body(envelope)))


def forged(body: str) -> str:
    """The same fact with its payload's innermost command or event changed: the record does not hold it."""
    event = json.loads(body)
    detail = event["detail"]
    payload = detail["payload"]
    inner = payload.get("command") or payload.get("event")
    if inner is not None:
        inner["payload"] = {**inner["payload"], "order_id": "o-forged"}
    else:
        payload["order_id"] = "o-forged"
    return json.dumps(event)


def state(pipeline: InMemoryPipeline) -> WorkflowState:
    return pipeline.store.states[(TENANT, RUN)]


@pytest.fixture(autouse=True)
def _fresh_runs() -> None:
    sample_workflow.RUNS.clear()


@pytest.mark.parametrize("stage", list(IN_FLIGHT))
@pytest.mark.parametrize(("deployed", "reason"), [((), REMOVED), ((version_2(),), REPLACED)])
def test_a_run_in_flight_across_the_redeploy_fails_with_the_reason_at_the_stage_it_reaches(
    stage: str, deployed: tuple[Workflow, ...], reason: str
) -> None:
    before = InMemoryPipeline(Catalog([sample_workflow.workflow]))
    waiting = until(before, order(), stage, IN_FLIGHT[stage])
    ran_before = list(sample_workflow.RUNS)
    after = redeployed(before, *deployed)
    at = state(after)

    _, head = waiting[0]
    assert after.deliver(stage, forged(head)).outcome is Outcome.QUARANTINED
    assert state(after) == at, "a fact the pipeline never recorded ends nothing"
    drain(after, waiting)

    ended = state(after)
    assert (ended.status, ended.reason) == (Status.FAILED, reason)
    assert ran_before == sample_workflow.RUNS, "no tool ran after the redeploy"
    (failed,) = [e for e in after.bus.published if e.type == facts.WORKFLOW_FAILED]
    assert (failed.payload["workflow"], failed.payload["reason"]) == ("orders", reason)
    assert [q["reason"].startswith(NOT_RECORDED) for q in after.quarantine.records] == [True]
    assert any(e.summary.get("reason") == reason for e in after.store.entries(TENANT, RUN))


def test_an_accepted_start_whose_workflow_was_removed_is_recorded_stale_and_starts_no_run() -> None:
    before = InMemoryPipeline(Catalog([sample_workflow.workflow]))
    accepted = before.deliver("validate", order()).published
    after = redeployed(before)

    result = after.deliver("decide", bus_body(accepted[0]))

    assert result.outcome is Outcome.STALE
    assert result.reason == "no workflow in this deployment declares 'OrderPlaced': not decided"
    assert (TENANT, RUN) not in after.store.states
    assert after.quarantine.records == []


def test_a_producer_event_of_a_removed_workflow_is_quarantined_and_touches_no_run() -> None:
    before = InMemoryPipeline(Catalog([sample_workflow.workflow]))
    waiting = until(before, order(), "execute", facts.COMMAND_AUTHORIZED)
    after = redeployed(before)
    at = state(after)

    after.run(order())  # the same run id, from a producer

    assert state(after) == at
    assert [q["reason"] for q in after.quarantine.records] == [
        "unknown type 'OrderPlaced': no registered workflow declares it"
    ]
    drain(after, waiting)
    assert state(after).status is Status.FAILED


def waiting_for_approval() -> InMemoryPipeline:
    """An orders run in production, its ship commands waiting for a person's approval."""
    pipeline = InMemoryPipeline(Catalog([sample_workflow.workflow]), environment="production")
    pipeline.run(order())
    assert state(pipeline).status is Status.AWAITING_APPROVAL
    return pipeline


@pytest.mark.parametrize(("deployed", "reason"), [((), REMOVED), ((version_2(),), REPLACED)])
def test_an_approval_given_after_the_redeploy_runs_nothing_and_the_run_fails(
    deployed: tuple[Workflow, ...], reason: str
) -> None:
    after = redeployed(waiting_for_approval(), *deployed)
    ran_before = list(sample_workflow.RUNS)

    for approval in after.store.pending_approvals(TENANT):
        result = after.desk.decide(
            tenant_id=TENANT,
            approval_id=approval.approval_id,
            approver=Approver(id="ann", tenant_id=TENANT, via="cli"),
            approve=True,
        )
        after.follow(result.published)

    assert (state(after).status, state(after).reason) == (Status.FAILED, reason)
    assert ran_before == sample_workflow.RUNS
    (skipped,) = [e for e in after.bus.published if e.type == facts.COMMAND_SKIPPED]
    assert skipped.payload["reason"].endswith(": not run"), "the second approval came too late: stale"


def test_an_approval_that_expires_after_the_workflow_was_removed_fails_the_run() -> None:
    after = redeployed(waiting_for_approval())
    after.clock.advance(timedelta(hours=4, minutes=1).total_seconds())

    expired = after.desk.expire_due()

    assert [r.answer for r in expired] == [Answer.EXPIRED, Answer.EXPIRED]
    assert (state(after).status, state(after).reason) == (Status.FAILED, REMOVED)
    first, second = (r.published for r in expired)
    assert [e.type for e in first] == [facts.APPROVAL_EXPIRED, facts.WORKFLOW_FAILED]
    assert first[0].payload["then"] == EXPIRY_FAILS
    assert [e.type for e in second] == [facts.APPROVAL_EXPIRED], "the run had already ended"
    after.follow([*first, *second])
    assert state(after).status is Status.FAILED
