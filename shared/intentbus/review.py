"""Human review of a paused run: resume it with a raised budget, or cancel it. Each is one conditional write.

decide pauses a run that crosses a budget (the run PAUSED, ``HumanReviewRequired`` published, the
spend and the paused input in decide's log entry); record (an unknown outcome) and the approval
expiry (``escalate``) pause runs too. Nothing waits for the person. An answer moves the run in one
write conditioned on the version read — applied only while the run is still PAUSED at the version of
the pause it answers — and then publishes:

* resume (budget pauses only): the run goes back to RUNNING with the raised limits stored on its
  state (``budget_override``), and the paused event is published again in a fresh ``EventAccepted``
  whose id is derived from the pause, so decide decides it exactly once; the resume fences its step
  to that input (``WorkflowState.resumed``). ``RunResumed`` says who, why and the new limits.
* retry (pauses for a repeated failure, see intentbus.failure_review): the run goes back to RUNNING and
  the input that kept failing is published again, unchanged (same id), so its stage handles it afresh
  with its attempts counted anew. ``RunRetried`` says who, why, and which stage.
* cancel (any pause): the run ends CANCELLED; ``RunCancelled`` says who and why.

The review's log entry is keyed by the ``HumanReviewRequired`` fact it answers: answering the same
pause again the same way gets the same answer and publishes the very same facts again (same ids,
so downstream dedups — and the way to finish a publish that a crash interrupted); the other way is
refused. A stale answer (the run moved on, or is not PAUSED), a resume whose raised budget would
still be crossed, or a resume of a pause no budget caused is refused with its reason and recorded in
the run's log: nothing is applied.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from intentbus import budgets, facts
from intentbus.approvals import Approver
from intentbus.definition import Budget
from intentbus.envelope import Envelope, Kind
from intentbus.ids import derive_id
from intentbus.journal import Commit, CommitStatus, LogEntry, Outcome
from intentbus.ports import WorkflowStore
from intentbus.principals import canonical
from intentbus.registry import Payload
from intentbus.stages.common import COMMIT_ATTEMPTS, StageDeps, log_only, pipeline_fact, retry_on_conflict
from intentbus.stages.retired import why_retired
from intentbus.state import BudgetOverride, Resumption, Status, WorkflowState, settle

STAGE = "review"
ATTEMPT_STAGE = "review-attempt"
RESUME_STAGE = "review.resume"
"""Names the re-published EventAccepted's derivation: ``derive_id(review_id, RESUME_STAGE, 0)``."""

Reviewer = Approver
"""Who answers, as the authenticator (or STS, for the CLI) established it."""


class Action(StrEnum):
    RESUME = "resume"
    RETRY = "retry"
    CANCEL = "cancel"


class Answer(StrEnum):
    RESUMED = "resumed"
    RETRIED = "retried"
    CANCELLED = "cancelled"
    STALE = "stale"
    """The run moved on, or is not PAUSED at the version answered."""
    CONFLICT = "conflict"
    """The pause was already answered the other way, or cannot be resumed (no budget paused it, or its
    workflow definition is no longer deployed)."""
    INSUFFICIENT = "insufficient"
    """The raised budget would still be crossed by the paused input."""
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"


HTTP_STATUS = {
    Answer.RESUMED: 200,
    Answer.RETRIED: 200,
    Answer.CANCELLED: 200,
    Answer.STALE: 409,
    Answer.CONFLICT: 409,
    Answer.INSUFFICIENT: 422,
    Answer.FORBIDDEN: 403,
    Answer.NOT_FOUND: 404,
}


@dataclass(frozen=True)
class Result:
    """The review desk's answer to a person's request, the run as it now is and the facts it published."""

    answer: Answer
    reason: str
    state: WorkflowState | None = None
    """The run as it is after this answer (unchanged when refused)."""
    published: tuple[Envelope, ...] = ()

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.answer]

    @property
    def ok(self) -> bool:
        return self.http_status == 200


@dataclass(frozen=True)
class Pause:
    """A pause of a run: the log entry that paused it and the HumanReviewRequired it published."""

    entry: LogEntry
    review: Envelope

    @property
    def review_id(self) -> str:
        return self.review.id

    @property
    def version(self) -> int:
        """The run's version once paused: an answer applies only while the run is still at it."""
        return self.entry.version

    @property
    def fact(self) -> facts.HumanReviewRequired:
        return facts.HumanReviewRequired.model_validate(self.review.payload)

    @property
    def resumable(self) -> bool:
        """Only a budget pause can be resumed: decide recorded the paused input to decide again."""
        return self.entry.stage == "decide" and isinstance(self.entry.summary.get("event"), dict)

    def paused_event(self) -> Envelope:
        return Envelope.model_validate(self.entry.summary["event"])

    @property
    def retriable(self) -> bool:
        """A pause for a repeated failure recorded the input that failed, to publish it again."""
        return isinstance(self.entry.summary.get("retry"), dict)

    def failed_input(self) -> Envelope:
        return Envelope.model_validate(self.entry.summary["retry"])


@dataclass(frozen=True)
class PausedRun:
    """A paused run and the pause that holds it."""

    state: WorkflowState
    pause: Pause


class ReviewStore(WorkflowStore, Protocol):
    def state(self, tenant_id: str, run_id: str) -> WorkflowState | None: ...

    def runs(self, tenant_id: str, status: str | None = None) -> list[WorkflowState]: ...


@dataclass(frozen=True)
class _Request:
    """One person's answer to one paused run, as the desk checks and records it."""

    tenant_id: str
    run_id: str
    reviewer: Reviewer
    action: Action
    reason: str
    version: int | None
    now: datetime
    budget: BudgetOverride | None = None

    @property
    def answer(self) -> Answer:
        return _ANSWERS[self.action]

    @property
    def said(self) -> str:
        return f"{_ANSWERS[self.action].value} by {self.reviewer.name}" + (
            f": {self.reason}" if self.reason else ""
        )


_ANSWERS = {Action.RESUME: Answer.RESUMED, Action.RETRY: Answer.RETRIED, Action.CANCEL: Answer.CANCELLED}


def _still_paused_by(pause: Pause, state: WorkflowState, entries: Sequence[LogEntry]) -> bool:
    """Whether the PAUSED run is still at ``pause``: at its version, or, for a failure's pause, it is the
    run's latest pause (siblings of the failed command may record their results while it waits, which
    moves the version but not the pause)."""
    if state.version == pause.version:
        return True
    latest = pause_at(entries, None)
    return pause.retriable and latest is not None and latest.review_id == pause.review_id


def pauses(entries: Sequence[LogEntry]) -> Iterator[Pause]:
    """Every pause in a run's log, in log order."""
    for entry in entries:
        for output in entry.outputs:
            if output.type == facts.HUMAN_REVIEW_REQUIRED:
                yield Pause(entry=entry, review=output)


def pause_at(entries: Sequence[LogEntry], version: int | None) -> Pause | None:
    """The pause that left the run at ``version``; with ``None``, the latest pause."""
    found = [pause for pause in pauses(entries) if version is None or pause.version == version]
    return max(found, key=lambda pause: pause.version, default=None)


@dataclass
class ReviewDesk:
    """Lists a tenant's paused runs and resumes, retries or cancels one as a person answers."""

    deps: StageDeps
    store: ReviewStore
    stage_principals: frozenset[str] = frozenset()
    """The pipeline's stage roles: they never answer a pause."""
    catalog_is_deployed: bool = True
    """Whether ``deps.catalog`` is the deployment's own: then a resume of a run whose definition it lacks
    is refused up front. A desk outside the deployment (the CLI, which loads no workflow modules) cannot
    tell, and leaves it to the stages, which end such a run FAILED with the reason."""

    def __post_init__(self) -> None:
        self.stage_principals = frozenset(canonical(principal) for principal in self.stage_principals)

    def paused(self, tenant_id: str) -> list[PausedRun]:
        """The tenant's runs waiting for review, with what paused each."""
        found: list[PausedRun] = []
        for listed in self.store.runs(tenant_id, Status.PAUSED.value):
            state = self.store.state(tenant_id, listed.run_id)  # the index may lag behind the run
            if state is None or state.status is not Status.PAUSED:
                continue
            entries = self.store.entries(tenant_id, state.run_id)
            pause = pause_at(entries, state.version) or pause_at(entries, None)
            if pause is not None and _still_paused_by(pause, state, entries):
                found.append(PausedRun(state=state, pause=pause))
        return found

    def resume(
        self,
        *,
        tenant_id: str,
        run_id: str,
        reviewer: Reviewer,
        budget: BudgetOverride,
        reason: str = "",
        version: int | None = None,
    ) -> Result:
        """Resume the run paused at ``version`` (by default its latest pause) with ``budget`` raised."""
        return self._answer(
            _Request(
                tenant_id, run_id, reviewer, Action.RESUME, reason, version, self.deps.clock.now(), budget
            )
        )

    def retry(
        self, *, tenant_id: str, run_id: str, reviewer: Reviewer, reason: str = "", version: int | None = None
    ) -> Result:
        """Retry the input whose repeated failure paused the run at ``version`` (by default its latest
        pause): the run goes back to RUNNING and the input is published again."""
        return self._answer(
            _Request(tenant_id, run_id, reviewer, Action.RETRY, reason, version, self.deps.clock.now())
        )

    def cancel(
        self, *, tenant_id: str, run_id: str, reviewer: Reviewer, reason: str, version: int | None = None
    ) -> Result:
        """Cancel the run paused at ``version`` (by default its latest pause): it ends CANCELLED."""
        return self._answer(
            _Request(tenant_id, run_id, reviewer, Action.CANCEL, reason, version, self.deps.clock.now())
        )

    # ------------------------------------------------------------------ answering

    def _answer(self, request: _Request) -> Result:
        return retry_on_conflict(
            lambda: self._attempt(request),
            exhausted=f"run {request.run_id} changed {COMMIT_ATTEMPTS} times while answering",
        )

    def _attempt(self, request: _Request) -> Result | None:
        # The tenant before the read: another tenant's run is not found, and nothing is recorded.
        if request.reviewer.tenant_id != request.tenant_id:
            return Result(Answer.NOT_FOUND, f"no run {request.run_id} for tenant {request.tenant_id}")
        # The state first, then the log: an answer that lands in between is found in the log.
        state = self.store.state(request.tenant_id, request.run_id)
        if state is None:
            return Result(Answer.NOT_FOUND, f"no run {request.run_id} for tenant {request.tenant_id}")
        if request.reviewer.principal in self.stage_principals:
            why = f"{request.reviewer.name} is a role of the pipeline and may not answer a pause"
            return self._refuse(request, state, Answer.FORBIDDEN, why)
        entries = self.store.entries(request.tenant_id, request.run_id)
        pause = pause_at(entries, request.version)
        if pause is None:
            where = "was never paused" if request.version is None else f"has no pause at v{request.version}"
            why = f"the run {where}; it is {state.status.value} at v{state.version}"
            return self._refuse(request, state, Answer.STALE, why)
        answered = next((e for e in entries if e.stage == STAGE and e.input_id == pause.review_id), None)
        if answered is not None:
            return self._already(request, state, answered)
        if state.status is not Status.PAUSED or not _still_paused_by(pause, state, entries):
            why = (
                f"the run moved on since its pause at v{pause.version}: "
                f"it is {state.status.value} at v{state.version}"
            )
            return self._refuse(request, state, Answer.STALE, why)
        if request.action is Action.CANCEL:
            return self._cancel(request, state, pause)
        if request.action is Action.RETRY:
            if not pause.retriable:
                why = (
                    f"{pause.entry.stage} paused the run ({pause.fact.limit}: {pause.fact.reason}), "
                    "not a repeated failure: only a failure can be retried"
                )
                return self._refuse(request, state, Answer.CONFLICT, why)
            return self._retry(request, state, pause)
        if not pause.resumable:
            instead = "retry or cancel it" if pause.retriable else "cancel it"
            why = (
                f"{pause.entry.stage} paused the run ({pause.fact.limit}: {pause.fact.reason}), "
                f"not a budget: only a budget pause can be resumed; {instead}"
            )
            return self._refuse(request, state, Answer.CONFLICT, why)
        return self._resume(request, state, pause)

    def _resume(self, request: _Request, state: WorkflowState, pause: Pause) -> Result | None:
        retired = why_retired(self.deps, state) if self.catalog_is_deployed else None
        if retired is not None:
            why = f"{retired}: it cannot be resumed; cancel it"
            return self._refuse(request, state, Answer.CONFLICT, why)
        event = pause.paused_event()
        raised = (request.budget or BudgetOverride()).over(state.budget_override)
        budget = budgets.raised(self._paused_under(state, pause), raised)
        breach = budgets.check(budget, state, depth=event.depth, now=request.now)
        if breach is not None:
            why = f"the raised budget would still be crossed: {breach.reason}"
            return self._refuse(request, state, Answer.INSUFFICIENT, why)
        version = state.version + 1
        accepted = pause.review.follow(
            stage=RESUME_STAGE,
            type=facts.EVENT_ACCEPTED,
            kind=Kind.EVENT,
            payload=facts.EventAccepted(event=event).model_dump(mode="json"),
            time=request.now,
            source=facts.PIPELINE_SOURCE,
            version=version,
            step_index=event.step_index,
            depth=event.depth,
        )
        resumed = state.model_copy(
            update={
                "version": version,
                "status": Status.RUNNING,
                "reason": None,
                "budget_override": raised,
                "resumed": Resumption(
                    accepted_id=accepted.id,
                    step_index=state.step_index,
                    by=request.reviewer.id,
                    at=request.now,
                ),
                "updated_at": request.now,
            }
        )
        notice = facts.RunResumed(
            workflow=state.workflow,
            reviewer=request.reviewer.id,
            reason=request.said,
            review_id=pause.review_id,
            accepted_id=accepted.id,
            budget=budgets.describe(budget),
            spend=pause.fact.spend,
        )
        outputs = (self._fact(pause, facts.RUN_RESUMED, notice, version, request.now), accepted)
        summary = {
            "budget": budgets.describe(budget),
            "raised": raised.model_dump(mode="json", exclude_none=True),
            "accepted_id": accepted.id,
            "event_id": event.id,
        }
        return self._commit(request, state, resumed, pause, outputs=outputs, extra=summary)

    def _retry(self, request: _Request, state: WorkflowState, pause: Pause) -> Result | None:
        retired = why_retired(self.deps, state) if self.catalog_is_deployed else None
        if retired is not None:
            why = f"{retired}: it cannot be retried; cancel it"
            return self._refuse(request, state, Answer.CONFLICT, why)
        failed = pause.failed_input()
        retried = state.model_copy(
            update={
                "version": state.version + 1,
                "status": Status.RUNNING,
                "reason": None,
                "updated_at": request.now,
            }
        )
        notice = facts.RunRetried(
            workflow=state.workflow,
            reviewer=request.reviewer.id,
            reason=request.said,
            review_id=pause.review_id,
            retried_id=failed.id,
            stage=pause.entry.stage,
        )
        outputs = (self._fact(pause, facts.RUN_RETRIED, notice, retried.version, request.now), failed)
        summary = {"retried_id": failed.id, "retried_type": failed.type, "stage": pause.entry.stage}
        return self._commit(request, state, retried, pause, outputs=outputs, extra=summary)

    def _cancel(self, request: _Request, state: WorkflowState, pause: Pause) -> Result | None:
        cancelled = settle(state, status=Status.CANCELLED, reason=request.said, now=request.now)
        notice = facts.RunCancelled(
            workflow=state.workflow,
            reviewer=request.reviewer.id,
            reason=request.said,
            review_id=pause.review_id,
            spend=pause.fact.spend,
        )
        outputs = (self._fact(pause, facts.RUN_CANCELLED, notice, cancelled.version, request.now),)
        return self._commit(request, state, cancelled, pause, outputs=outputs, extra={})

    def _commit(
        self,
        request: _Request,
        state: WorkflowState,
        new_state: WorkflowState,
        pause: Pause,
        *,
        outputs: tuple[Envelope, ...],
        extra: Mapping[str, object],
    ) -> Result | None:
        entry = LogEntry(
            stage=STAGE,
            input_id=pause.review_id,
            input_type=facts.HUMAN_REVIEW_REQUIRED,
            outcome=Outcome.APPLIED,
            at=request.now,
            version=new_state.version,
            outputs=outputs,
            summary={
                "decision": request.action.value,
                "reviewer": request.reviewer.id,
                "reviewer_label": request.reviewer.label,
                "reviewer_tenant": request.reviewer.tenant_id,
                "via": request.reviewer.via,
                "reason": request.said,
                "note": request.reason,
                "paused_at_version": pause.version,
                "limit": pause.fact.limit,
                "spend": pause.fact.spend,
                **extra,
            },
        )
        commit = Commit(
            entry=entry,
            tenant_id=state.tenant_id,
            run_id=state.run_id,
            expected_version=state.version,
            state=new_state,
        )
        result = self.store.commit(commit)
        if result.status is CommitStatus.VERSION_CONFLICT:
            return None  # the run changed under us: read it again
        if result.status is CommitStatus.ALREADY_RECORDED:
            assert result.entry is not None
            return self._already(request, state, result.entry)
        self.deps.bus.publish(entry.outputs)
        return Result(request.answer, request.said, new_state, entry.outputs)

    def _already(self, request: _Request, state: WorkflowState, answered: LogEntry) -> Result:
        """The pause was answered: the same way gets the same answer and the same facts again."""
        decision = str(answered.summary.get("decision"))
        by = answered.summary.get("reviewer")
        if decision == request.action.value:
            if answered.outputs:
                self.deps.bus.publish(answered.outputs)
            why = f"already {answered.summary.get('reason', decision)}"
            return Result(request.answer, why, state, answered.outputs)
        done = next((_ANSWERS[action].value for action in Action if action.value == decision), decision)
        return self._refuse(request, state, Answer.CONFLICT, f"the pause was already {done} by {by}")

    def _refuse(self, request: _Request, state: WorkflowState, answer: Answer, why: str) -> Result:
        """A refused answer changes nothing, but is recorded in the run's log with its reason, once per
        reviewer, wish, answer and run version: the same refusal again is the same entry."""
        reviewer = request.reviewer
        attempt_id = derive_id(
            request.run_id, reviewer.tenant_id, reviewer.id, request.action.value, answer.value, state.version
        )
        entry = LogEntry(
            stage=ATTEMPT_STAGE,
            input_id=attempt_id,
            input_type=facts.HUMAN_REVIEW_REQUIRED,
            outcome=Outcome.STALE if answer is Answer.STALE else Outcome.DENIED,
            at=request.now,
            version=state.version,
            summary={
                "wanted": request.action.value,
                "reviewer": reviewer.id,
                "reviewer_label": reviewer.label,
                "reviewer_tenant": reviewer.tenant_id,
                "via": reviewer.via,
                "version": request.version,
                "raised": None
                if request.budget is None
                else request.budget.model_dump(mode="json", exclude_none=True),
                "answer": answer.value,
                "reason": why,
            },
        )
        self.store.commit(log_only(entry, state.tenant_id, state.run_id))
        return Result(answer, why, state)

    def _paused_under(self, state: WorkflowState, pause: Pause) -> Budget:
        """The budget the run was paused under, as decide recorded it with the pause (it already holds
        the tenant's budget and earlier raises): no workflow module need be importable here. A pause
        recorded without one falls back to the registered workflow."""
        recorded = pause.entry.summary.get("budget")
        if isinstance(recorded, dict):
            return budgets.from_description(recorded)
        return budgets.for_run(self.deps.catalog.workflow(state.workflow), state)

    @staticmethod
    def _fact(pause: Pause, type_name: str, payload: Payload, version: int, now: datetime) -> Envelope:
        return pipeline_fact(
            pause.review, stage=STAGE, type_name=type_name, payload=payload, time=now, version=version
        )
