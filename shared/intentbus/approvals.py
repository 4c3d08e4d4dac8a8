"""Human approval: a durable record a person decides on later; deciding is one conditional write.

Nothing waits for the person. authorize leaves a PENDING approval with an expiry and the run
AWAITING_APPROVAL; a decision (from the API, the CLI or the console) moves the approval and the run
in one transaction — only while the approval is PENDING and unexpired, and only while the run
still waits for that very command — and then publishes CommandAuthorized or CommandDenied. Every
refused attempt is recorded in the run's log with its reason.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from intentbus import facts
from intentbus.approval_record import Approval
from intentbus.envelope import Envelope
from intentbus.ids import derive_id
from intentbus.journal import ApprovalStatus, Commit, CommitStatus, LogEntry, Outcome
from intentbus.policy import Effect, Verdict
from intentbus.ports import WorkflowStore
from intentbus.principals import canonical
from intentbus.registry import Payload
from intentbus.stages.common import (
    COMMIT_ATTEMPTS,
    StageDeps,
    authorization_for,
    log_only,
    pipeline_fact,
    retry_on_conflict,
)
from intentbus.stages.retired import why_retired
from intentbus.state import Status, WorkflowState, settle

STAGE = "approval"
ATTEMPT_STAGE = "approval-attempt"
EXPIRY_FAILS = "fail"
"""What follows an expiry when the run's workflow definition is gone: the run fails with the reason."""


class Approver(BaseModel):
    """Who decides, as the authenticator established it (never taken from a request body)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str = Field(min_length=1)
    """Immutable: a Cognito user's ``sub``, or the caller's IAM (STS) ARN."""
    tenant_id: str = Field(min_length=1)
    via: str = Field(min_length=1)
    """How the identity was established: ``cognito``, ``iam`` or ``cli``."""
    label: str | None = None
    """What people call them (a Cognito user's email): shown, never compared."""

    @property
    def principal(self) -> str:
        """What the proposer check compares: a role and all its sessions are one principal."""
        return f"cognito:{self.id}" if self.via == "cognito" else canonical(self.id)

    @property
    def name(self) -> str:
        return f"{self.label} ({self.id})" if self.label and self.label != self.id else self.id


class Answer(StrEnum):
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    STALE = "stale"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"


HTTP_STATUS = {
    Answer.APPROVED: 200,
    Answer.REJECTED: 200,
    Answer.EXPIRED: 409,
    Answer.STALE: 409,
    Answer.CONFLICT: 409,
    Answer.FORBIDDEN: 403,
    Answer.NOT_FOUND: 404,
}


@dataclass(frozen=True)
class Result:
    """The desk's answer to a decision, the approval as it now is and the facts it published."""

    answer: Answer
    reason: str
    approval: Approval | None = None
    published: tuple[Envelope, ...] = ()

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.answer]


@dataclass(frozen=True)
class _Request:
    """One person's decision on one approval, as the desk checks and records it."""

    approval: Approval
    approver: Approver
    approve: bool
    reason: str
    now: datetime

    @property
    def wanted(self) -> ApprovalStatus:
        return ApprovalStatus.APPROVED if self.approve else ApprovalStatus.REJECTED

    @property
    def answer(self) -> Answer:
        return Answer.APPROVED if self.approve else Answer.REJECTED


ALL_PENDING_BY = datetime.max.replace(tzinfo=UTC)
"""Later than any expiry: ``due_approvals(ALL_PENDING_BY)`` lists everything in the sweep's index."""


@dataclass(frozen=True)
class Sweep:
    """What one expiry sweep did, and what it left pending."""

    at: datetime
    results: list[Result]
    pending: list[Approval]
    """The pending approvals it listed and did not find due, soonest expiry first."""


class ApprovalStore(WorkflowStore, Protocol):
    def approval(self, tenant_id: str, approval_id: str) -> Approval | None: ...

    def pending_approvals(self, tenant_id: str) -> list[Approval]: ...

    def due_approvals(self, now: datetime) -> list[Approval]: ...

    def mark_announced(self, approval: Approval) -> None: ...


@dataclass
class ApprovalDesk:
    """Lists a tenant's pending approvals and records a person's decision on one."""

    deps: StageDeps
    store: ApprovalStore
    stage_principals: frozenset[str] = frozenset()
    """The pipeline's stage roles: they propose, so they never decide."""

    def __post_init__(self) -> None:
        self.stage_principals = frozenset(canonical(principal) for principal in self.stage_principals)

    def pending(self, tenant_id: str) -> list[Approval]:
        now = self.deps.clock.now()
        return [
            approval for approval in self.store.pending_approvals(tenant_id) if not approval.expired_at(now)
        ]

    def show(self, tenant_id: str, approval_id: str) -> Approval | None:
        return self.store.approval(tenant_id, approval_id)

    def decide(
        self, *, tenant_id: str, approval_id: str, approver: Approver, approve: bool, reason: str = ""
    ) -> Result:
        return retry_on_conflict(
            lambda: self._attempt(tenant_id, approval_id, approver, approve, reason),
            exhausted=f"approval {approval_id} changed {COMMIT_ATTEMPTS} times while deciding",
        )

    def expire_due(self) -> list[Result]:
        return self.sweep().results

    def sweep(self) -> Sweep:
        """Turns every lapsed PENDING approval into ApprovalExpired; what follows is the workflow's choice.

        It also finishes what a crash cut short: a decision or expiry recorded but not announced has
        its recorded events published again (the same ids, so consumers see a duplicate at most).
        One listing of the sweep's index serves both and the backlog: the due ones are those whose
        ``sweep_key`` is before now, as ``due_approvals(now)`` would list them.
        """
        now = self.deps.clock.now()
        due_now: list[Approval] = []
        pending: list[Approval] = []
        for listed in self.store.due_approvals(ALL_PENDING_BY):
            if listed.sweep_key is not None and listed.sweep_key < now:
                due_now.append(listed)
            elif listed.status is ApprovalStatus.PENDING:
                pending.append(listed)
        results: list[Result] = []
        for due in due_now:
            if due.status is not ApprovalStatus.PENDING:
                announced = self._announce_again(due)
                if announced is not None:
                    results.append(announced)
                continue
            results.extend(retry_on_conflict(self._expiry_attempts(due, now), exhausted=list))
        return Sweep(at=now, results=results, pending=pending)

    def _expiry_attempts(self, due: Approval, now: datetime) -> Callable[[], list[Result] | None]:
        """Expire ``due``, reading it again after a conflict; nothing once it is no longer PENDING.

        Still conflicting after the last attempt, it is left to the next sweep."""
        current: list[Approval | None] = [due]

        def attempt() -> list[Result] | None:
            approval = current[0]
            if approval is None or approval.status is not ApprovalStatus.PENDING:
                return []
            result = self._expire(approval, now)
            if result is not None:
                return [result]
            current[0] = self.store.approval(due.tenant_id, due.approval_id)
            return None

        return attempt

    # ------------------------------------------------------------------ deciding

    def _attempt(
        self, tenant_id: str, approval_id: str, approver: Approver, approve: bool, reason: str
    ) -> Result | None:
        # The tenant before the read: another tenant's approval is not found, and nothing is recorded.
        if approver.tenant_id != tenant_id:
            return Result(Answer.NOT_FOUND, f"no approval {approval_id} for tenant {tenant_id}")
        approval = self.store.approval(tenant_id, approval_id)
        if approval is None:
            return Result(Answer.NOT_FOUND, f"no approval {approval_id} for tenant {tenant_id}")
        request = _Request(approval, approver, approve, reason, self.deps.clock.now())
        if approver.principal in self.stage_principals or approver.principal in approval.proposers:
            why = f"{approver.name} is a principal that proposed this command and may not decide it"
            return self._refuse(request, Answer.FORBIDDEN, why)
        if approval.status is not ApprovalStatus.PENDING:
            return self._already(request)
        if approval.expired_at(request.now):
            if self._expire(approval, request.now) is None:
                return None
            return self._refuse(
                request, Answer.EXPIRED, f"the approval expired at {approval.expires_at.isoformat()}"
            )
        snapshot = self.store.snapshot(approval.tenant_id, approval.run_id, STAGE, approval.approval_id)
        if snapshot.entry is not None:
            return None  # decided while this attempt read: read again
        state = snapshot.state
        if (
            state is None
            or state.status is not Status.AWAITING_APPROVAL
            or (approval.command.id not in state.awaiting_approval)
        ):
            where = "gone" if state is None else f"{state.status.value} at version {state.version}"
            return self._refuse(request, Answer.STALE, f"the run moved on since the proposal (now {where})")
        return self._apply(request, state)

    def _apply(self, request: _Request, state: WorkflowState) -> Result | None:
        approval, command, now = request.approval, request.approval.command, request.now
        said = f"{request.answer.value} by {request.approver.name}" + (
            f": {request.reason}" if request.reason else ""
        )
        payload: Payload
        if request.approve:
            verdict = Verdict(effect=Effect.ALLOW, rule="human-approval", reason=said)
            fact_type, payload = (
                facts.COMMAND_AUTHORIZED,
                facts.CommandAuthorized(
                    command=command,
                    verdict=verdict,
                    resource_version=approval.resource_version,
                ),
            )
        else:
            verdict = Verdict(effect=Effect.DENY, rule="human-approval", reason=said)
            fact_type, payload = facts.COMMAND_DENIED, facts.CommandDenied(command=command, verdict=verdict)
        still_waiting = tuple(waiting for waiting in state.awaiting_approval if waiting != command.id)
        resumed = state.model_copy(
            update={
                "version": state.version + 1,
                "awaiting_approval": still_waiting,
                "updated_at": now,
                "status": Status.AWAITING_APPROVAL if still_waiting else Status.RUNNING,
            }
        )
        decided = approval.model_copy(
            update={
                "status": request.wanted,
                "decided_by": request.approver.id,
                "decided_by_label": request.approver.label,
                "decided_at": now,
                "decision_reason": request.reason or None,
            }
        )
        output = _follow(command, fact_type, payload, version=resumed.version, now=now)
        authorization = (
            authorization_for(output, command, approval.resource_version, by=STAGE, at=now)
            if request.approve
            else None
        )
        entry = LogEntry(
            stage=STAGE,
            input_id=approval.approval_id,
            input_type=command.type,
            outcome=Outcome.APPLIED if request.approve else Outcome.DENIED,
            at=now,
            version=resumed.version,
            outputs=(output,),
            summary={
                "approver": request.approver.id,
                "approver_label": request.approver.label,
                "via": request.approver.via,
                "decision": request.wanted.value,
                "reason": said,
                "command_id": command.id,
            },
        )
        commit = Commit(
            entry=entry,
            tenant_id=approval.tenant_id,
            run_id=approval.run_id,
            expected_version=state.version,
            state=resumed,
            approval=decided,
            approval_was=ApprovalStatus.PENDING,
            authorization=authorization,
        )
        result = self.store.commit(commit)
        if result.status is CommitStatus.VERSION_CONFLICT:
            return None
        outputs = entry.outputs if result.entry is None else result.entry.outputs
        self._announce(decided, outputs)
        return Result(request.answer, said, decided, tuple(outputs))

    def _already(self, request: _Request) -> Result:
        """Deciding again the same way gets the same answer (and the same events again); otherwise 409."""
        approval = request.approval
        if approval.status is request.wanted:
            entry = self.store.snapshot(
                approval.tenant_id, approval.run_id, STAGE, approval.approval_id
            ).entry
            outputs = () if entry is None else entry.outputs
            if outputs:
                self._announce(approval, outputs)
            why = f"already {approval.status.value.lower()} by {approval.decider}"
            return Result(request.answer, why, approval, tuple(outputs))
        if approval.status is ApprovalStatus.EXPIRED:
            return self._refuse(
                request, Answer.EXPIRED, f"the approval expired at {approval.expires_at.isoformat()}"
            )
        why = f"the approval was already {approval.status.value.lower()} by {approval.decider}"
        return self._refuse(request, Answer.CONFLICT, why)

    def _refuse(self, request: _Request, answer: Answer, why: str) -> Result:
        """A refused attempt changes nothing, but is recorded with its reason, once: the same refusal
        again (same approver, same wish, same answer) is the same entry, so retries cannot grow the log."""
        approval, approver = request.approval, request.approver
        attempt_id = derive_id(
            approval.approval_id, approver.tenant_id, approver.id, request.approve, answer.value
        )
        entry = LogEntry(
            stage=ATTEMPT_STAGE,
            input_id=attempt_id,
            input_type=approval.command.type,
            outcome=Outcome.STALE if answer in (Answer.STALE, Answer.EXPIRED) else Outcome.DENIED,
            at=request.now,
            version=approval.proposed_at_version,
            summary={
                "approval_id": approval.approval_id,
                "approver": approver.id,
                "approver_label": approver.label,
                "approver_tenant": approver.tenant_id,
                "via": approver.via,
                "wanted": "approve" if request.approve else "reject",
                "answer": answer.value,
                "reason": why,
            },
        )
        self.store.commit(log_only(entry, approval.tenant_id, approval.run_id))
        return Result(answer, why, approval)

    # ------------------------------------------------------------------ expiring

    def _expire(self, approval: Approval, now: datetime) -> Result | None:
        state = self.store.snapshot(approval.tenant_id, approval.run_id, STAGE, approval.approval_id).state
        expired = approval.model_copy(update={"status": ApprovalStatus.EXPIRED, "decided_at": now})
        # What follows is the workflow definition's to say; a run whose definition a redeploy removed
        # or replaced cannot go on, so it fails with the reason.
        retired = why_retired(self.deps, state)
        registered = self.deps.catalog.workflows.get(approval.workflow)
        then = EXPIRY_FAILS if retired is not None or registered is None else registered.on_approval_expiry
        notice = facts.ApprovalExpired(
            approval_id=approval.approval_id,
            command=approval.command,
            expired_at=approval.expires_at,
            then=then,
        )
        waiting = state is not None and approval.command.id in state.awaiting_approval
        new_state: WorkflowState | None = None
        outputs: list[Envelope] = []
        if state is not None and waiting:
            if retired is not None:
                new_state = settle(state, status=Status.FAILED, reason=retired, now=now)
            elif then == "escalate":
                new_state = settle(state, status=Status.PAUSED, reason="the approval expired", now=now)
            else:
                remaining = tuple(w for w in state.awaiting_approval if w != approval.command.id)
                new_state = state.model_copy(
                    update={"version": state.version + 1, "awaiting_approval": remaining, "updated_at": now}
                )
        version = new_state.version if new_state is not None else approval.proposed_at_version
        outputs.append(_follow(approval.command, facts.APPROVAL_EXPIRED, notice, version=version, now=now))
        if new_state is not None and then == "cancel":
            verdict = Verdict(
                effect=Effect.DENY,
                rule="approval-expired",
                reason=f"no decision before {approval.expires_at.isoformat()}",
            )
            outputs.append(
                _follow(
                    approval.command,
                    facts.COMMAND_DENIED,
                    facts.CommandDenied(command=approval.command, verdict=verdict),
                    version=version,
                    now=now,
                    index=1,
                )
            )
        if new_state is not None and retired is not None:
            failed = facts.WorkflowFailed(
                workflow=new_state.workflow, status=new_state.status.value, reason=retired
            )
            outputs.append(
                _follow(approval.command, facts.WORKFLOW_FAILED, failed, version=version, now=now, index=1)
            )
        if new_state is not None and then == "escalate":
            review = facts.HumanReviewRequired(
                reason="the approval expired",
                limit="approval_timeout",
                spend={"steps": new_state.steps_taken},
            )
            outputs.append(
                _follow(
                    approval.command, facts.HUMAN_REVIEW_REQUIRED, review, version=version, now=now, index=1
                )
            )
        entry = LogEntry(
            stage=STAGE,
            input_id=approval.approval_id,
            input_type=approval.command.type,
            outcome=Outcome.STALE,
            at=now,
            version=version,
            outputs=tuple(outputs),
            summary={
                "decision": "EXPIRED",
                "then": then if waiting else "nothing: the run had moved on",
                "reason": f"no decision before {approval.expires_at.isoformat()}"
                + (f"; {retired}" if retired is not None and waiting else ""),
            },
        )
        commit = Commit(
            entry=entry,
            tenant_id=approval.tenant_id,
            run_id=approval.run_id,
            expected_version=None if new_state is None else state.version if state else None,
            state=new_state,
            approval=expired,
            approval_was=ApprovalStatus.PENDING,
        )
        result = self.store.commit(commit)
        if result.status is CommitStatus.VERSION_CONFLICT:
            return None
        recorded: Sequence[Envelope] = entry.outputs if result.entry is None else result.entry.outputs
        self._announce(expired, recorded)
        return Result(Answer.EXPIRED, str(entry.summary["reason"]), expired, tuple(recorded))

    # ------------------------------------------------------------------ announcing

    def _announce(self, approval: Approval, outputs: Sequence[Envelope]) -> None:
        """Publishes, then marks the approval announced: a crash between the two publishes again."""
        self.deps.bus.publish(outputs)
        if not approval.announced:
            self.store.mark_announced(approval)

    def _announce_again(self, listed: Approval) -> Result | None:
        """A decided or expired approval the sweep's index still lists: publish what was recorded."""
        approval = self.store.approval(listed.tenant_id, listed.approval_id)  # the index may lag
        if approval is None or approval.announced:
            return None
        entry = self.store.snapshot(approval.tenant_id, approval.run_id, STAGE, approval.approval_id).entry
        outputs = () if entry is None else entry.outputs  # the decision and its entry are one write
        self._announce(approval, outputs)
        if approval.status is not ApprovalStatus.EXPIRED or entry is None:
            return None  # a person's decision, not an expiry: the sweep expired nothing here
        return Result(Answer.EXPIRED, str(entry.summary["reason"]), approval, tuple(outputs))


def _follow(
    command: Envelope, fact_type: str, payload: Payload, *, version: int, now: datetime, index: int = 0
) -> Envelope:
    return pipeline_fact(
        command, stage=STAGE, type_name=fact_type, payload=payload, time=now, version=version, index=index
    )
