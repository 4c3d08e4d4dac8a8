"""Execute's retries and the review of repeated failures, in memory: the backoff asked of SQS per attempt,
the pause when attempts run out, the desk's retry that runs the command again, and what it refuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from intentbus import facts
from intentbus.approvals import Approver
from intentbus.catalog import Catalog
from intentbus.definition import RepeatSafety, RetryPolicy, Step, ToolContext, ToolError, Workflow, tool
from intentbus.envelope import Envelope
from intentbus.failure_review import Cause, Failure, pause_for_failure
from intentbus.journal import Outcome
from intentbus.policy import Effect, Policy, Rule
from intentbus.registry import Payload
from intentbus.retries import Delivery, RetryLater
from intentbus.review import Answer, ReviewDesk
from intentbus.stages.execute import ExecuteStage
from intentbus.state import Status
from intentbus.testing.bodies import bus_body
from intentbus.testing.pipeline import InMemoryPipeline
from tests.fakes import raw_body
from tests.unit.test_review import ReviewableStore

TENANT = "acme"
ALICE = Approver(id="alice", tenant_id=TENANT, via="cli")
MALLORY = Approver(id="mallory", tenant_id="globex", via="cli")
POLICY = RetryPolicy(base_seconds=10, cap_seconds=25, max_attempts=3)
FAILURES: list[Exception] = []
"""What the next calls of the tool raise, in order; once empty, it succeeds."""


class Nudge(Payload):
    target: str


class Nudged(Payload):
    target: str


@tool(repeat_safety=RepeatSafety.SAFE)
def nudge(command: Nudge, context: ToolContext) -> Mapping[str, Any]:
    if FAILURES:
        raise FAILURES.pop(0)
    return {"target": command.target}


workflow = Workflow(
    name="nudging",
    version="1",
    policy=Policy(rules=(Rule(id="nudge", command="Nudge", effect=Effect.ALLOW, reason="harmless"),)),
)
workflow.command("Nudge", Nudge, tool=nudge, starts=True, retry=POLICY)
workflow.event("Nudged", Nudged)
workflow.step(Step(on="Nudge", agent=None, outcome="Nudged", final=True))


@pytest.fixture
def pipeline() -> InMemoryPipeline:
    FAILURES.clear()
    pipeline = InMemoryPipeline(Catalog([workflow]), store=ReviewableStore())
    execute = pipeline.stages["execute"]
    assert isinstance(execute, ExecuteStage)
    pipeline.stages["execute"] = ExecuteStage(
        pipeline.deps,
        pipeline.runner,
        pipeline.clients,
        execute.guard,
        store=pipeline.store,
        jitter=lambda: 0.5,
    )
    return pipeline


def authorized(pipeline: InMemoryPipeline) -> Envelope:
    """Sends a Nudge whose first attempt fails retryably; returns the CommandAuthorized execute got."""
    FAILURES.append(ToolError("throttled", retryable=True))
    body = raw_body(
        {"id": "nudge-1", "tenant_id": TENANT, "type": "Nudge", "payload": {"target": "t-1"}},
        detail_type="Nudge",
        source="ops.example",
    )
    with pytest.raises(RetryLater):
        pipeline.run(body)
    (fact,) = [e for e in pipeline.bus.published if e.type == facts.COMMAND_AUTHORIZED]
    return fact


def execute(pipeline: InMemoryPipeline, fact: Envelope, receive: int) -> Outcome:
    stage = pipeline.stages["execute"]
    assert isinstance(stage, ExecuteStage)
    return stage.handle_delivery(bus_body(fact), "m-1", Delivery(receive, 5)).outcome


def test_each_retryable_failure_asks_for_the_backoff_then_the_last_pauses_the_run(
    pipeline: InMemoryPipeline,
) -> None:
    fact = authorized(pipeline)
    waits: list[int] = []
    for receive in (1, 2):
        FAILURES.append(ToolError("throttled", retryable=True))
        with pytest.raises(RetryLater) as later:
            execute(pipeline, fact, receive)
        assert (later.value.attempt, later.value.max_attempts) == (receive, 3)
        waits.append(later.value.delay_seconds)
    assert waits == [15, 25]  # min(25, 10 * 2**(n-1)) + 0.5 * 10, rounded up

    FAILURES.append(ToolError("throttled", retryable=True))
    assert execute(pipeline, fact, 3) is Outcome.PAUSED
    state = pipeline.store.states[(TENANT, fact.run_id)]
    assert state.status is Status.PAUSED
    (review,) = [e for e in pipeline.bus.published if e.type == facts.HUMAN_REVIEW_REQUIRED]
    payload = facts.HumanReviewRequired.model_validate(review.payload)
    assert (payload.limit, payload.stage, payload.attempts) == ("retries_exhausted", "execute", 3)
    assert payload.error == "ToolError: throttled"

    # The same failure delivered again publishes the same pause, and pauses nothing more.
    FAILURES.append(ToolError("throttled", retryable=True))
    assert execute(pipeline, fact, 4) is Outcome.DUPLICATE
    assert pipeline.store.states[(TENANT, fact.run_id)].version == state.version


def test_a_failure_not_worth_retrying_fails_the_command_at_once(pipeline: InMemoryPipeline) -> None:
    fact = authorized(pipeline)
    FAILURES.append(ToolError("no such target", retryable=False))
    assert execute(pipeline, fact, 2) is Outcome.APPLIED
    (failed,) = [e for e in pipeline.bus.published if e.type == facts.COMMAND_FAILED]
    assert failed.payload["error"] == "no such target"


def test_a_person_retries_the_paused_command_once_and_the_run_completes(pipeline: InMemoryPipeline) -> None:
    fact = authorized(pipeline)
    failure = Failure.of("execute", TypeError("a bug"), 5, Cause.LAST_RECEIVE)
    assert pause_for_failure(pipeline.deps, pipeline.store, fact, failure) is not None
    assert isinstance(pipeline.store, ReviewableStore)
    desk = ReviewDesk(pipeline.deps, pipeline.store)
    (listed,) = desk.paused(TENANT)
    assert listed.pause.retriable
    assert not listed.pause.resumable

    assert desk.retry(tenant_id="globex", run_id=fact.run_id, reviewer=MALLORY).answer is Answer.NOT_FOUND
    result = desk.retry(tenant_id=TENANT, run_id=fact.run_id, reviewer=ALICE, reason="fixed")
    assert result.answer is Answer.RETRIED
    assert [e.type for e in result.published] == [facts.RUN_RETRIED, facts.COMMAND_AUTHORIZED]
    assert result.published[1] == fact  # the failed input itself, unchanged

    pipeline.follow(result.published)
    done = pipeline.store.states[(TENANT, fact.run_id)]
    assert done.status is Status.COMPLETED
    again = desk.retry(tenant_id=TENANT, run_id=fact.run_id, reviewer=ALICE, reason="fixed")
    assert (again.answer, again.reason) == (Answer.RETRIED, "already retried by alice: fixed")
    cancel = desk.cancel(
        tenant_id=TENANT, run_id=fact.run_id, reviewer=ALICE, reason="no", version=listed.pause.version
    )
    assert cancel.answer is Answer.CONFLICT  # already retried


def test_only_a_failure_can_be_retried(pipeline: InMemoryPipeline) -> None:
    from tests import pingpong_workflow
    from tests.unit.test_review import desk as review_desk
    from tests.unit.test_review import pipeline_with, serve

    paused = pipeline_with(pingpong_workflow.workflow, pingpong_workflow.relay)
    serve(paused)
    result = review_desk(paused).retry(tenant_id=TENANT, run_id="run-rally", reviewer=ALICE, reason="go")
    assert result.answer is Answer.CONFLICT
    assert "only a failure can be retried" in result.reason


def test_a_failure_pause_stays_answerable_while_siblings_record_their_results(
    pipeline: InMemoryPipeline,
) -> None:
    fact = authorized(pipeline)
    failure = Failure.of("execute", TypeError("a bug"), 5, Cause.LAST_RECEIVE)
    assert pause_for_failure(pipeline.deps, pipeline.store, fact, failure) is not None
    key = (TENANT, fact.run_id)
    paused = pipeline.store.states[key]
    # A sibling command's result recorded meanwhile: the run stays PAUSED, one version on.
    pipeline.store.states[key] = paused.model_copy(update={"version": paused.version + 1})
    assert isinstance(pipeline.store, ReviewableStore)
    desk = ReviewDesk(pipeline.deps, pipeline.store)
    assert [listed.state.run_id for listed in desk.paused(TENANT)] == [fact.run_id]
    assert desk.retry(tenant_id=TENANT, run_id=fact.run_id, reviewer=ALICE).answer is Answer.RETRIED
