"""A person's review of a paused run: resume with a raised budget, or cancel; each a conditional write."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from intentbus import facts
from intentbus.approvals import Approver
from intentbus.catalog import Catalog
from intentbus.definition import Workflow
from intentbus.journal import Commit, CommitResult, LogEntry, Outcome
from intentbus.review import ATTEMPT_STAGE, STAGE, Answer, Result, ReviewDesk
from intentbus.state import BudgetOverride, Status, WorkflowState
from intentbus.testing import InMemoryPipeline, InMemoryStore, bus_body
from tests import pingpong_workflow
from tests.fakes import raw_body
from tests.unit.test_approvals import release_workflow

TENANT = "acme"
RUN = "run-rally"
ALICE = Approver(id="alice", tenant_id=TENANT, via="cli")
MALLORY = Approver(id="mallory", tenant_id="globex", via="cli")
LIMIT = pingpong_workflow.MAX_DEPTH
TOKENS = pingpong_workflow.TOKENS_PER_CALL


@dataclass
class ReviewableStore(InMemoryStore):
    """The in-memory store with the two reads the review desk adds: a run's state and a tenant's runs."""

    interloper: WorkflowState | None = None
    """Written just before the next commit lands, as a concurrent writer would."""

    def state(self, tenant_id: str, run_id: str) -> WorkflowState | None:
        return self.states.get((tenant_id, run_id))

    def runs(self, tenant_id: str, status: str | None = None) -> list[WorkflowState]:
        return sorted(
            (s for (t, _), s in self.states.items() if t == tenant_id and status in (None, s.status.value)),
            key=lambda s: s.updated_at,
            reverse=True,
        )

    def commit(self, commit: Commit) -> CommitResult:
        if self.interloper is not None:
            state, self.interloper = self.interloper, None
            self.states[(state.tenant_id, state.run_id)] = state
        return super().commit(commit)


def pipeline_with(*workflows: Workflow) -> InMemoryPipeline:
    pingpong_workflow.agent_calls.clear()
    return InMemoryPipeline(Catalog(workflows), store=ReviewableStore())


def desk(pipeline: InMemoryPipeline) -> ReviewDesk:
    assert isinstance(pipeline.store, ReviewableStore)
    return ReviewDesk(pipeline.deps, pipeline.store)


def serve(pipeline: InMemoryPipeline, *, run_id: str = RUN) -> None:
    pipeline.run(
        raw_body(
            {
                "id": f"evt-{run_id}",
                "tenant_id": TENANT,
                "run_id": run_id,
                "type": "Ping",
                "payload": {"rally": 0},
            },
            detail_type="Ping",
            source="arcade.example",
        )
    )


@pytest.fixture
def paused() -> InMemoryPipeline:
    """A ping-pong run paused at its depth limit (depth LIMIT + 1, after LIMIT + 1 steps)."""
    pipeline = pipeline_with(pingpong_workflow.workflow, pingpong_workflow.relay)
    serve(pipeline)
    assert run(pipeline).status is Status.PAUSED
    return pipeline


def run(pipeline: InMemoryPipeline, run_id: str = RUN) -> WorkflowState:
    return pipeline.store.states[(TENANT, run_id)]


def entries(pipeline: InMemoryPipeline, stage: str, run_id: str = RUN) -> list[LogEntry]:
    return [e for e in pipeline.store.entries(TENANT, run_id) if e.stage == stage]


def resume(
    pipeline: InMemoryPipeline,
    budget: BudgetOverride,
    *,
    reviewer: Approver = ALICE,
    version: int | None = None,
    follow: bool = True,
) -> Result:
    result = desk(pipeline).resume(
        tenant_id=TENANT,
        run_id=RUN,
        reviewer=reviewer,
        budget=budget,
        reason="the rally is worth watching",
        version=version,
    )
    if follow:
        pipeline.follow(result.published)
    return result


def cancel(pipeline: InMemoryPipeline, *, version: int | None = None, run_id: str = RUN) -> Result:
    result = desk(pipeline).cancel(
        tenant_id=TENANT, run_id=run_id, reviewer=ALICE, reason="they will never stop", version=version
    )
    pipeline.follow(result.published)
    return result


# ---------------------------------------------------------------------- listing


def test_a_paused_run_is_listed_with_what_paused_it_and_its_spend(paused: InMemoryPipeline) -> None:
    (listed,) = desk(paused).paused(TENANT)
    assert listed.state == run(paused)
    assert listed.pause.resumable
    assert listed.pause.version == run(paused).version
    assert listed.pause.fact.limit == "depth"
    assert listed.pause.fact.spend["depth"] == LIMIT + 1
    assert desk(paused).paused("globex") == []


# ---------------------------------------------------------------------- resume


def test_a_paused_run_whose_workflow_a_redeploy_removed_can_be_cancelled_not_resumed(
    paused: InMemoryPipeline,
) -> None:
    redeployed = InMemoryPipeline(
        Catalog([pingpong_workflow.relay]), store=paused.store, bus=paused.bus, clock=paused.clock
    )
    before = run(redeployed)

    refused = resume(redeployed, BudgetOverride(max_depth=LIMIT + 2))

    assert (refused.answer, refused.http_status) == (Answer.CONFLICT, 409)
    assert refused.reason == (
        "workflow 'ping_pong' is not registered in this deployment: it cannot be resumed; cancel it"
    )
    assert run(redeployed) == before
    assert cancel(redeployed).answer is Answer.CANCELLED
    assert run(redeployed).status is Status.CANCELLED


def test_resume_decides_the_paused_input_once_and_the_run_goes_on_to_its_raised_limit(
    paused: InMemoryPipeline,
) -> None:
    before = run(paused)
    pause = entries(paused, "decide")[-1]
    result = resume(paused, BudgetOverride(max_depth=LIMIT + 2))

    assert (result.answer, result.http_status) == (Answer.RESUMED, 200)
    assert result.reason == "resumed by alice: the rally is worth watching"
    resumed, accepted = result.published
    assert resumed.type == facts.RUN_RESUMED
    assert resumed.payload["budget"]["max_depth"] == LIMIT + 2
    assert resumed.payload["spend"] == pause.summary["spend"]
    assert accepted.type == facts.EVENT_ACCEPTED
    assert accepted.payload["event"] == pause.summary["event"], "the very event that paused the run"
    assert accepted.id != pause.input_id

    (again,) = [e for e in entries(paused, "decide") if e.input_id == accepted.id]
    assert again.outcome is Outcome.APPLIED, "the paused input was decided, once"
    (review,) = entries(paused, STAGE)
    assert review.summary["decision"] == "resume"
    assert (review.summary["reviewer"], review.summary["note"]) == ("alice", "the rally is worth watching")
    assert review.summary["raised"] == {"max_depth": LIMIT + 2}
    assert review.version == before.version + 1

    after = run(paused)
    assert after.status is Status.PAUSED, "it went on, then crossed the raised limit"
    assert after.reason == f"causation depth {LIMIT + 3} is over the limit {LIMIT + 2}"
    assert after.budget_override == BudgetOverride(max_depth=LIMIT + 2)
    assert (after.steps_taken, after.tokens_used) == (LIMIT + 3, (LIMIT + 3) * TOKENS)
    assert len(pingpong_workflow.agent_calls) == LIMIT + 3
    assert pingpong_workflow.agent_calls[LIMIT + 1] == f"pinger:{RUN}:{LIMIT + 1}", "the paused Pong"


def test_resume_finishes_a_run_paused_on_its_steps() -> None:
    pipeline = pipeline_with(pingpong_workflow.relay)
    pipeline.run(
        raw_body(
            {
                "id": "evt-1",
                "tenant_id": TENANT,
                "run_id": RUN,
                "type": "RelayStarted",
                "payload": {"leg": 0},
            },
            detail_type="RelayStarted",
        )
    )
    assert (run(pipeline).status, run(pipeline).steps_taken) == (Status.PAUSED, 1)

    result = resume(pipeline, BudgetOverride(max_steps=2))
    assert result.answer is Answer.RESUMED
    finished = run(pipeline)
    assert (finished.status, finished.steps_taken) == (Status.COMPLETED, 2)
    assert facts.WORKFLOW_COMPLETED in [e.type for e in pipeline.bus.published]


def test_a_run_past_its_deadline_resumed_with_a_later_one_goes_on_to_its_next_limit() -> None:
    pipeline = pipeline_with(pingpong_workflow.workflow)
    body = raw_body(
        {"id": "evt-1", "tenant_id": TENANT, "run_id": RUN, "type": "Ping", "payload": {"rally": 0}},
        detail_type="Ping",
    )
    published = pipeline.deliver("validate", body).published
    for stage in ("decide", "authorize", "execute", "record"):  # the first step, by hand
        published = pipeline.deliver(stage, bus_body(published[0])).published
    pipeline.clock.advance(timedelta(hours=25).total_seconds())
    pipeline.follow(published)
    late = run(pipeline)
    assert (late.status, late.reason, late.steps_taken) == (
        Status.PAUSED,
        "the run is older than its deadline of 1 day, 0:00:00",
        1,
    )

    assert resume(pipeline, BudgetOverride(deadline=timedelta(hours=24))).answer is Answer.INSUFFICIENT
    result = resume(pipeline, BudgetOverride(deadline=timedelta(hours=48)))
    assert result.answer is Answer.RESUMED
    assert result.published[0].payload["budget"]["deadline_seconds"] == 48 * 3600
    after = run(pipeline)
    assert (after.status, after.reason) == (
        Status.PAUSED,
        f"causation depth {LIMIT + 1} is over the limit {LIMIT}",
    )
    assert after.budget_override == BudgetOverride(deadline=timedelta(hours=48))


def test_resuming_twice_is_one_resumption(paused: InMemoryPipeline) -> None:
    version = run(paused).version
    first = resume(paused, BudgetOverride(max_depth=LIMIT + 2), follow=False)
    second = resume(paused, BudgetOverride(max_depth=LIMIT + 9), follow=False)  # a double click
    assert second.answer is Answer.RESUMED
    assert second.reason == "already resumed by alice: the rally is worth watching"
    assert [e.id for e in second.published] == [e.id for e in first.published], "the same facts again"
    paused.follow(first.published)
    paused.follow(second.published)
    later = resume(paused, BudgetOverride(max_depth=LIMIT + 9), version=version)  # after the run went on

    assert [e.id for e in later.published] == [e.id for e in first.published]
    assert len(entries(paused, STAGE)) == 1
    assert len(pingpong_workflow.agent_calls) == LIMIT + 3, "decided once, however often it was published"
    assert run(paused).budget_override == BudgetOverride(max_depth=LIMIT + 2)


def test_a_resume_whose_publish_was_lost_is_finished_by_resuming_again(paused: InMemoryPipeline) -> None:
    paused.bus.fail_next = 1
    with pytest.raises(ConnectionError):
        resume(paused, BudgetOverride(max_depth=LIMIT + 2))
    assert run(paused).status is Status.RUNNING, "recorded before publishing"
    result = resume(paused, BudgetOverride(max_depth=LIMIT + 2))
    assert result.answer is Answer.RESUMED
    assert run(paused).reason == f"causation depth {LIMIT + 3} is over the limit {LIMIT + 2}"


def test_a_resume_whose_budget_is_still_crossed_is_refused_and_nothing_applied(
    paused: InMemoryPipeline,
) -> None:
    before = run(paused)
    published = len(paused.bus.published)
    result = resume(paused, BudgetOverride(max_steps=100))

    assert (result.answer, result.http_status) == (Answer.INSUFFICIENT, 422)
    assert (
        result.reason
        == f"the raised budget would still be crossed: causation depth {LIMIT + 1} is over the limit {LIMIT}"
    )
    assert run(paused) == before
    assert len(paused.bus.published) == published
    (attempt,) = entries(paused, ATTEMPT_STAGE)
    assert attempt.summary["reason"] == result.reason
    assert attempt.summary["raised"] == {"max_steps": 100}


def test_a_stale_resume_is_refused_with_its_reason(paused: InMemoryPipeline) -> None:
    before = run(paused)
    result = resume(paused, BudgetOverride(max_depth=LIMIT + 2), version=before.version - 1)
    assert (result.answer, result.http_status) == (Answer.STALE, 409)
    assert (
        result.reason == f"the run has no pause at v{before.version - 1}; it is PAUSED at v{before.version}"
    )
    assert run(paused) == before
    assert entries(paused, STAGE) == []
    assert [e.summary["answer"] for e in entries(paused, ATTEMPT_STAGE)] == ["stale"]


def test_a_resume_racing_another_write_is_not_applied_over_it(paused: InMemoryPipeline) -> None:
    before = run(paused)
    moved = before.model_copy(update={"version": before.version + 1, "status": Status.FAILED})
    store = paused.store
    assert isinstance(store, ReviewableStore)
    store.interloper = moved
    result = resume(paused, BudgetOverride(max_depth=LIMIT + 2))

    assert result.answer is Answer.STALE
    assert (
        result.reason
        == f"the run moved on since its pause at v{before.version}: it is FAILED at v{moved.version}"
    )
    assert run(paused) == moved
    assert entries(paused, STAGE) == []
    assert pingpong_workflow.agent_calls[LIMIT + 1 :] == []


def test_only_the_resumed_input_is_decided_at_the_resumed_step(paused: InMemoryPipeline) -> None:
    result = resume(paused, BudgetOverride(max_depth=LIMIT + 2), follow=False)
    pause = entries(paused, "decide")[-1]
    original = next(e for e in paused.bus.published if e.id == pause.input_id)
    assert original.source == facts.WORKFLOW_SOURCE, "the paused input: an outcome straight from record"
    assert paused.deliver("decide", bus_body(original)).outcome is Outcome.DUPLICATE
    forged = original.model_copy(update={"id": "accepted-elsewhere"})  # recorded by no stage
    assert paused.deliver("decide", bus_body(forged)).forged
    another = original.model_copy(update={"id": "evt-another", "source": "arcade.example"})
    accepted = paused.deliver(
        "validate", raw_body(another.to_json_dict(), detail_type=another.type, source="arcade.example")
    )
    stale = paused.deliver("decide", bus_body(accepted.published[0]))
    assert stale.outcome is Outcome.STALE
    assert (
        stale.reason == f"alice resumed step {LIMIT + 1} to decide {result.published[1].id} again, not this"
    )
    assert pingpong_workflow.agent_calls[LIMIT + 1 :] == []
    paused.follow(result.published)
    assert len(pingpong_workflow.agent_calls) == LIMIT + 3


def test_a_reviewer_of_another_tenant_finds_nothing_and_leaves_nothing(paused: InMemoryPipeline) -> None:
    """Attack: globex's reviewer resumes acme's run (20 times): not found, the run's log unchanged."""
    before = run(paused)
    logged = len(paused.store.entries(TENANT, before.run_id))
    for _ in range(20):
        result = resume(paused, BudgetOverride(max_depth=LIMIT + 2), reviewer=MALLORY)
        assert (result.answer, result.http_status, result.state) == (Answer.NOT_FOUND, 404, None)
    assert run(paused) == before
    assert len(paused.store.entries(TENANT, before.run_id)) == logged


def test_the_same_refusal_again_is_one_entry(paused: InMemoryPipeline) -> None:
    """Attack: grow the run's log with refused resumes (a raise too small, 20 times)."""
    for _ in range(20):
        assert resume(paused, BudgetOverride(max_depth=1)).answer is Answer.INSUFFICIENT
    assert len(entries(paused, ATTEMPT_STAGE)) == 1


def test_a_run_that_does_not_exist_is_not_found(paused: InMemoryPipeline) -> None:
    result = cancel(paused, run_id="run-nobody")
    assert (result.answer, result.http_status) == (Answer.NOT_FOUND, 404)


def test_a_pause_no_budget_caused_can_be_cancelled_not_resumed() -> None:
    pipeline = pipeline_with(release_workflow(on_expiry="escalate"))
    pipeline.run(
        raw_body(
            {
                "id": "evt-1",
                "tenant_id": TENANT,
                "run_id": RUN,
                "type": "ReleaseReady",
                "payload": {"service": "api", "version": "2.0"},
            },
            detail_type="ReleaseReady",
        )
    )
    pipeline.clock.advance(timedelta(hours=5).total_seconds())
    pipeline.desk.expire_due()
    assert run(pipeline).status is Status.PAUSED

    refused = resume(pipeline, BudgetOverride(max_steps=100))
    assert refused.answer is Answer.CONFLICT
    assert refused.reason.startswith(
        "approval paused the run (approval_timeout: the approval expired), not a budget"
    )
    cancelled = cancel(pipeline)
    assert cancelled.answer is Answer.CANCELLED
    assert run(pipeline).status is Status.CANCELLED


# ---------------------------------------------------------------------- cancel


def test_cancel_ends_the_run_with_who_and_why_in_its_log(paused: InMemoryPipeline) -> None:
    before = run(paused)
    calls = len(pingpong_workflow.agent_calls)
    result = cancel(paused)

    assert (result.answer, result.http_status) == (Answer.CANCELLED, 200)
    assert result.reason == "cancelled by alice: they will never stop"
    after = run(paused)
    assert (after.status, after.version, after.reason) == (
        Status.CANCELLED,
        before.version + 1,
        "cancelled by alice: they will never stop",
    )
    assert after.terminal
    (notice,) = result.published
    assert notice.type == facts.RUN_CANCELLED
    assert notice.payload["reviewer"] == "alice"
    assert notice.payload["spend"]["depth"] == LIMIT + 1
    (review,) = entries(paused, STAGE)
    assert (review.summary["decision"], review.summary["reviewer"], review.summary["note"]) == (
        "cancel",
        "alice",
        "they will never stop",
    )

    again = cancel(paused)
    assert (again.answer, again.reason) == (
        Answer.CANCELLED,
        "already cancelled by alice: they will never stop",
    )
    assert [e.id for e in again.published] == [notice.id]
    refused = resume(paused, BudgetOverride(max_depth=LIMIT + 2))
    assert (refused.answer, refused.reason) == (Answer.CONFLICT, "the pause was already cancelled by alice")
    accepted = [e for e in paused.bus.published if e.type == facts.EVENT_ACCEPTED]
    assert paused.deliver("decide", bus_body(accepted[-1])).outcome is Outcome.DUPLICATE
    assert len(pingpong_workflow.agent_calls) == calls
    assert run(paused) == after


def test_cancel_after_a_resume_is_refused(paused: InMemoryPipeline) -> None:
    version = run(paused).version
    resume(paused, BudgetOverride(max_depth=LIMIT + 2), follow=False)
    refused = cancel(paused, version=version)
    assert (refused.answer, refused.reason) == (Answer.CONFLICT, "the pause was already resumed by alice")
    assert run(paused).status is Status.RUNNING


def test_a_run_that_never_paused_is_stale() -> None:
    pipeline = pipeline_with(pingpong_workflow.relay)
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
    finished = pipeline.store.states[("roomy", "run-r")]
    assert finished.status is Status.COMPLETED
    result = desk(pipeline).cancel(
        tenant_id="roomy",
        run_id="run-r",
        reviewer=Approver(id="bob", tenant_id="roomy", via="cli"),
        reason="-",
    )
    assert (result.answer, result.reason) == (
        Answer.STALE,
        f"the run was never paused; it is COMPLETED at v{finished.version}",
    )
    assert pipeline.store.states[("roomy", "run-r")] == finished
