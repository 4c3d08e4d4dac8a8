"""Approvals decided by a conditional write: approve, reject, expire, stale, twice, cross-tenant, self."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import pytest

from intentbus.approval_record import Approval
from intentbus.approvals import ALL_PENDING_BY, Answer, Approver
from intentbus.catalog import Catalog
from intentbus.definition import (
    Decision,
    DecisionContext,
    ProposedCommand,
    RepeatSafety,
    ScriptedAgent,
    Step,
    ToolContext,
    ToolEffect,
    Workflow,
    tool,
)
from intentbus.journal import ApprovalStatus
from intentbus.policy import Effect, Policy, Rule
from intentbus.producers import ProducerBindings
from intentbus.registry import Payload
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline, bus_body
from tests.fakes import raw_body

DEPLOYS: list[str] = []
TENANT = "acme"
ALICE = Approver(id="alice", tenant_id=TENANT, via="cognito")


class ReleaseReady(Payload):
    service: str
    version: str


class Released(Payload):
    service: str
    version: str


class Deploy(Payload):
    service: str
    version: str


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.WRITES)
def deploy(command: Deploy, context: ToolContext) -> Mapping[str, Any]:
    DEPLOYS.append(f"{command.service}@{command.version}")
    return command.model_dump()


def release_workflow(version: str = "1", on_expiry: str = "cancel") -> Workflow:
    def propose(context: DecisionContext) -> Decision:
        event = context.event
        assert isinstance(event, ReleaseReady)
        return Decision(
            agent="release-bot",
            rationale="ship it",
            confidence=0.7,
            commands=(ProposedCommand(type="deploy", payload=event.model_dump()),),
        )

    workflow = Workflow(
        name="release",
        version=version,
        approval_timeout=timedelta(hours=4),
        on_approval_expiry=on_expiry,  # type: ignore[arg-type]
        policy=Policy(
            rules=(Rule(id="deploys-need-approval", command="deploy", effect=Effect.REQUIRE_APPROVAL),)
        ),
    )
    workflow.event("ReleaseReady", ReleaseReady, starts=True)
    workflow.event("Released", Released)
    workflow.command("deploy", Deploy, tool=deploy)
    workflow.step(
        Step(on="ReleaseReady", agent=ScriptedAgent("release-bot", propose), outcome="Released", final=True)
    )
    return workflow


@pytest.fixture
def waiting() -> tuple[InMemoryPipeline, Approval]:
    """A run paused on its approval."""
    DEPLOYS.clear()
    pipeline = InMemoryPipeline(Catalog([release_workflow()]))
    pipeline.run(
        raw_body(
            {
                "id": "evt-1",
                "tenant_id": TENANT,
                "run_id": "run-1",
                "type": "ReleaseReady",
                "payload": {"service": "api", "version": "2.0"},
            },
            detail_type="ReleaseReady",
        )
    )
    (approval,) = pipeline.store.approvals.values()
    assert pipeline.store.states[(TENANT, "run-1")].status is Status.AWAITING_APPROVAL
    return pipeline, approval


def decide(
    pipeline: InMemoryPipeline,
    approval: Approval,
    approver: Approver = ALICE,
    *,
    approve: bool = True,
    reason: str = "",
) -> Any:
    result = pipeline.desk.decide(
        tenant_id=approval.tenant_id,
        approval_id=approval.approval_id,
        approver=approver,
        approve=approve,
        reason=reason,
    )
    pipeline.follow(result.published)
    return result


def stages(pipeline: InMemoryPipeline) -> list[tuple[str, str]]:
    return [(entry.stage, entry.outcome.value) for entry in pipeline.store.entries(TENANT, "run-1")]


def test_approve_resumes_the_run_to_its_end(waiting: tuple[InMemoryPipeline, Approval]) -> None:
    pipeline, approval = waiting
    result = decide(pipeline, approval)
    assert (result.answer, result.http_status, result.reason) == (Answer.APPROVED, 200, "approved by alice")
    assert pipeline.store.states[(TENANT, "run-1")].status is Status.COMPLETED
    assert DEPLOYS == ["api@2.0"]
    assert pipeline.store.approvals[approval.approval_id].decided_by == "alice"
    assert ("approval", "applied") in stages(pipeline)


def test_reject_ends_the_run_denied_with_the_reason(waiting: tuple[InMemoryPipeline, Approval]) -> None:
    pipeline, approval = waiting
    result = decide(pipeline, approval, approve=False, reason="not on a Friday")
    assert result.answer is Answer.REJECTED
    state = pipeline.store.states[(TENANT, "run-1")]
    assert (state.status, state.reason) == (Status.DENIED, "rejected by alice: not on a Friday")
    assert DEPLOYS == []


def test_expiry_on_the_clock_cancels_and_a_late_approval_is_refused(
    waiting: tuple[InMemoryPipeline, Approval],
) -> None:
    pipeline, approval = waiting
    pipeline.clock.advance(timedelta(hours=4).total_seconds() - 1)
    assert pipeline.desk.expire_due() == []
    pipeline.clock.advance(2)
    (expired,) = pipeline.desk.expire_due()
    pipeline.follow(expired.published)
    assert [e.type for e in expired.published] == ["ApprovalExpired", "CommandDenied"]
    assert pipeline.store.states[(TENANT, "run-1")].status is Status.DENIED
    late = decide(pipeline, approval)
    assert (late.answer, late.http_status) == (Answer.EXPIRED, 409)
    assert DEPLOYS == []
    assert ("approval-attempt", "stale") in stages(pipeline)


def test_a_sweep_lists_its_index_once_and_reports_what_it_left_pending(
    waiting: tuple[InMemoryPipeline, Approval], monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline, approval = waiting
    listings: list[datetime] = []
    listed = pipeline.store.due_approvals

    def due_approvals(now: datetime) -> list[Approval]:
        listings.append(now)
        return listed(now)

    monkeypatch.setattr(pipeline.store, "due_approvals", due_approvals)
    pipeline.clock.advance(timedelta(hours=4).total_seconds() - 1)
    early = pipeline.desk.sweep()
    assert (early.results, early.pending) == ([], [approval])
    pipeline.clock.advance(2)
    late = pipeline.desk.sweep()
    assert [result.answer for result in late.results] == [Answer.EXPIRED]
    assert late.pending == []
    assert listings == [ALL_PENDING_BY, ALL_PENDING_BY]


def test_expiry_can_escalate_instead() -> None:
    pipeline = InMemoryPipeline(Catalog([release_workflow(on_expiry="escalate")]))
    pipeline.run(
        raw_body(
            {
                "id": "evt-2",
                "tenant_id": TENANT,
                "run_id": "run-1",
                "type": "ReleaseReady",
                "payload": {"service": "api", "version": "2.1"},
            },
            detail_type="ReleaseReady",
        )
    )
    pipeline.clock.advance(timedelta(hours=5).total_seconds())
    (expired,) = pipeline.desk.expire_due()
    assert [e.type for e in expired.published] == ["ApprovalExpired", "HumanReviewRequired"]
    assert pipeline.store.states[(TENANT, "run-1")].status is Status.PAUSED


def test_an_approval_after_the_run_moved_on_is_stale_and_not_applied(
    waiting: tuple[InMemoryPipeline, Approval],
) -> None:
    pipeline, approval = waiting
    state = pipeline.store.states[(TENANT, "run-1")]
    pipeline.store.states[(TENANT, "run-1")] = state.model_copy(
        update={"status": Status.FAILED, "awaiting_approval": (), "version": state.version + 1}
    )
    result = decide(pipeline, approval)
    assert (result.answer, result.http_status) == (Answer.STALE, 409)
    assert result.reason == f"the run moved on since the proposal (now FAILED at version {state.version + 1})"
    assert pipeline.store.approvals[approval.approval_id].status is ApprovalStatus.PENDING
    assert DEPLOYS == []


def test_approving_twice_gives_the_same_answer_and_one_authorization(
    waiting: tuple[InMemoryPipeline, Approval],
) -> None:
    pipeline, approval = waiting
    first = decide(pipeline, approval)
    second = decide(pipeline, approval)
    assert second.answer is Answer.APPROVED
    assert second.reason == "already approved by alice"
    assert [e.id for e in second.published] == [e.id for e in first.published]
    authorized = {e.id for e in pipeline.bus.published if e.type == "CommandAuthorized"}
    assert len(authorized) == 1
    assert DEPLOYS == ["api@2.0"]
    assert decide(pipeline, approval, approve=False).answer is Answer.CONFLICT


DECIDE_ROLE = "arn:aws:iam::123456789012:role/intentbus-DecideFunctionRole-1A2B"
DECIDE_SESSION = "arn:aws:sts::123456789012:assumed-role/intentbus-DecideFunctionRole-1A2B/intentbus-decide"


def test_another_tenant_gets_not_found_and_nothing_is_read_or_recorded(
    waiting: tuple[InMemoryPipeline, Approval],
) -> None:
    """Attack: an approver of globex decides acme's approval through the desk (the CLI's path)."""
    pipeline, approval = waiting
    result = decide(pipeline, approval, Approver(id="mallory", tenant_id="globex", via="cli"))
    assert (result.answer, result.http_status, result.approval) == (Answer.NOT_FOUND, 404, None)
    assert pipeline.store.states[(TENANT, "run-1")].status is Status.AWAITING_APPROVAL
    assert [e for e in pipeline.store.entries(TENANT, "run-1") if e.stage == "approval-attempt"] == []


def test_a_name_like_the_agents_is_no_proposer() -> None:
    """A person whose id happens to be the agent's name is not the proposer: principals are compared."""
    DEPLOYS.clear()
    pipeline = InMemoryPipeline(Catalog([release_workflow()]), pipeline_roles={"decide": DECIDE_ROLE})
    pipeline.run(_release_ready())
    (approval,) = pipeline.store.approvals.values()
    assert approval.proposers == (DECIDE_ROLE.lower(),)
    namesake = Approver(id="release-bot", tenant_id=TENANT, via="iam")
    assert decide(pipeline, approval, namesake).http_status == 200


def test_the_decide_role_cannot_approve_its_own_proposal_and_retries_are_one_entry() -> None:
    """Attack: decide's role (any session of it) approves the command decide proposed, 20 times."""
    DEPLOYS.clear()
    pipeline = InMemoryPipeline(Catalog([release_workflow()]), pipeline_roles={"decide": DECIDE_ROLE})
    pipeline.run(_release_ready())
    (approval,) = pipeline.store.approvals.values()
    robot = Approver(id=DECIDE_SESSION, tenant_id=TENANT, via="iam")
    results = [decide(pipeline, approval, robot) for _ in range(20)]
    assert {(r.answer, r.http_status) for r in results} == {(Answer.FORBIDDEN, 403)}
    assert pipeline.store.states[(TENANT, "run-1")].status is Status.AWAITING_APPROVAL
    attempts = [e for e in pipeline.store.entries(TENANT, "run-1") if e.stage == "approval-attempt"]
    assert len(attempts) == 1
    assert DEPLOYS == []


def test_a_stage_role_never_decides_even_what_another_stage_proposed() -> None:
    """Attack: the record stage's role approves (the stage roles are never approvers)."""
    DEPLOYS.clear()
    record_role = "arn:aws:iam::123456789012:role/intentbus-RecordFunctionRole-9Z"
    pipeline = InMemoryPipeline(
        Catalog([release_workflow()]), pipeline_roles={"decide": DECIDE_ROLE, "record": record_role}
    )
    pipeline.run(_release_ready())
    (approval,) = pipeline.store.approvals.values()
    session = "arn:aws:sts::123456789012:assumed-role/intentbus-RecordFunctionRole-9Z/s"
    assert decide(pipeline, approval, Approver(id=session, tenant_id=TENANT, via="iam")).http_status == 403


def test_approval_ids_differ_between_deployments_and_stay_across_redeliveries() -> None:
    """Attack: predict an approval id from the command's inputs (uuid5 under a public namespace)."""
    ids = []
    for salt in ("stack-a", "stack-b", "stack-a"):
        pipeline = InMemoryPipeline(Catalog([release_workflow()]), id_salt=salt)
        pipeline.run(_release_ready())
        (approval,) = pipeline.store.approvals.values()
        ids.append(approval.approval_id)
    assert ids[0] != ids[1]
    assert ids[0] == ids[2]
    # record finds the salted approval's rejection in its log: the run is denied, nothing quarantined
    (approval,) = pipeline.store.approvals.values()
    assert decide(pipeline, approval, approve=False, reason="not today").answer is Answer.REJECTED
    assert pipeline.store.states[(TENANT, "run-1")].status is Status.DENIED
    assert pipeline.quarantine.records == []


def _release_ready() -> str:
    return raw_body(
        {
            "id": "evt-1",
            "tenant_id": TENANT,
            "run_id": "run-1",
            "type": "ReleaseReady",
            "payload": {"service": "api", "version": "2.0"},
        },
        detail_type="ReleaseReady",
    )


def test_a_run_waiting_across_a_new_definition_version_fails_with_the_reason_and_runs_nothing(
    waiting: tuple[InMemoryPipeline, Approval],
) -> None:
    pipeline, approval = waiting
    upgraded = InMemoryPipeline(
        Catalog([release_workflow(version="2")]),
        store=pipeline.store,
        clock=pipeline.clock,
        runner=pipeline.runner,
    )
    assert decide(upgraded, approval).answer is Answer.APPROVED
    state = upgraded.store.states[(TENANT, "run-1")]
    assert (state.status, state.definition_version) == (Status.FAILED, "1")
    assert state.reason == (
        "the run started under version '1' of workflow 'release'; this deployment has version '2' only"
    )
    assert DEPLOYS == []


def test_an_approval_before_its_request_was_published_is_applied_once() -> None:
    DEPLOYS.clear()
    pipeline = InMemoryPipeline(Catalog([release_workflow()]))
    accepted = pipeline.deliver(
        "validate",
        raw_body(
            {
                "id": "evt-3",
                "tenant_id": TENANT,
                "run_id": "run-1",
                "type": "ReleaseReady",
                "payload": {"service": "api", "version": "3.0"},
            },
            detail_type="ReleaseReady",
        ),
    ).published
    (proposed,) = pipeline.deliver("decide", bus_body(accepted[0])).published
    pipeline.bus.fail_next = (
        1  # authorize records the approval, then dies before HumanApprovalRequired is out
    )
    with pytest.raises(ConnectionError):
        pipeline.deliver("authorize", bus_body(proposed))
    (approval,) = pipeline.store.approvals.values()

    assert decide(pipeline, approval).answer is Answer.APPROVED
    redelivered = pipeline.deliver("authorize", bus_body(proposed))
    assert [e.type for e in redelivered.published] == ["HumanApprovalRequired"]
    assert pipeline.store.states[(TENANT, "run-1")].status is Status.COMPLETED
    assert DEPLOYS == ["api@3.0"]


def test_a_decision_whose_publish_failed_is_announced_by_the_next_sweep(
    waiting: tuple[InMemoryPipeline, Approval],
) -> None:
    pipeline, approval = waiting
    pipeline.bus.fail_next = 1  # the decision is written, then the process dies before publishing
    with pytest.raises(ConnectionError):
        decide(pipeline, approval)
    assert pipeline.store.states[(TENANT, "run-1")].status is Status.RUNNING  # resumed, but nothing runs it
    assert DEPLOYS == []

    pipeline.clock.advance(60)
    assert pipeline.desk.expire_due() == []  # not an expiry: the decision's own events, published again
    (authorized,) = pipeline.bus.published[-1:]
    assert authorized.type == "CommandAuthorized"
    pipeline.follow([authorized])

    assert pipeline.store.states[(TENANT, "run-1")].status is Status.COMPLETED
    assert DEPLOYS == ["api@2.0"]
    assert pipeline.store.approvals[approval.approval_id].announced
    published = len(pipeline.bus.published)
    pipeline.clock.advance(60)
    assert (pipeline.desk.expire_due(), len(pipeline.bus.published)) == ([], published)


def test_an_expiry_whose_publish_failed_is_announced_by_the_next_sweep(
    waiting: tuple[InMemoryPipeline, Approval],
) -> None:
    pipeline, approval = waiting
    pipeline.clock.advance(timedelta(hours=4).total_seconds() + 1)
    pipeline.bus.fail_next = 1
    with pytest.raises(ConnectionError):
        pipeline.desk.expire_due()
    assert pipeline.store.approvals[approval.approval_id].status is ApprovalStatus.EXPIRED
    assert not pipeline.store.approvals[approval.approval_id].announced

    pipeline.clock.advance(60)
    (again,) = pipeline.desk.expire_due()
    assert [e.type for e in again.published] == ["ApprovalExpired", "CommandDenied"]
    pipeline.follow(again.published)

    assert pipeline.store.states[(TENANT, "run-1")].status is Status.DENIED
    assert pipeline.desk.expire_due() == []
    assert DEPLOYS == []


PRODUCER_ROLE = "arn:aws:iam::123456789012:role/release-pipeline"


def direct_deploys() -> Workflow:
    """A command another system sends directly, which always needs a person."""
    workflow = Workflow(
        name="direct-deploys",
        version="1",
        policy=Policy(rules=(Rule(id="needs-a-person", command="ship", effect=Effect.REQUIRE_APPROVAL),)),
    )
    workflow.command("ship", Deploy, tool=deploy, starts=True)
    workflow.event("Shipped", Released)
    workflow.step(Step(on="ship", agent=None, outcome="Shipped", final=True, tools=("ship",)))
    return workflow


def test_the_producer_of_a_direct_command_cannot_approve_it() -> None:
    """Attack: the release pipeline sends a deploy command directly, then approves it with its own role."""
    DEPLOYS.clear()
    pipeline = InMemoryPipeline(
        Catalog([direct_deploys()]),
        producers=ProducerBindings.parse(f"releases.example=acme by {PRODUCER_ROLE}"),
        pipeline_roles={"validate": "arn:aws:iam::123456789012:role/validate"},
    )
    command = {"id": "cmd-1", "tenant_id": TENANT, "run_id": "run-1", "type": "ship", "kind": "command"}
    pipeline.run(
        raw_body(
            {**command, "payload": {"service": "api", "version": "3"}},
            detail_type="ship",
            source="releases.example",
        )
    )
    (approval,) = pipeline.store.approvals.values()
    assert set(approval.proposers) == {PRODUCER_ROLE, "arn:aws:iam::123456789012:role/validate"}
    session = "arn:aws:sts::123456789012:assumed-role/release-pipeline/build-42"
    own = decide(pipeline, approval, Approver(id=session, tenant_id=TENANT, via="iam"))
    assert (own.answer, own.http_status) == (Answer.FORBIDDEN, 403)
    assert DEPLOYS == []
    assert decide(pipeline, approval).answer is Answer.APPROVED
    assert DEPLOYS == ["api@3"]
