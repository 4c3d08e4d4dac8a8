"""Repeated failures go to a person: the run pauses with a ``HumanReviewRequired`` saying which stage
failed, with what error, after how many attempts; the review desk retries or cancels it.

Three ways in: execute's retry policy ran out of attempts for a command; a stage's input failed on its
queue's last receive (the handler sees ``ApproximateReceiveCount >= maxReceiveCount``); or a message
slipped into a DLQ all the same (the dead-letter sweeper). The pause records the failed input (``retry``
in the entry's summary), which the desk's retry publishes again with its id unchanged: the stage handles
it afresh (nothing was recorded for it) and downstream dedup holds.

Only a running run is paused. The pause is one version-checked write keyed by the input and the run's
version, so a redelivery of the same failure republishes the same facts rather than pausing twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from intentbus import facts
from intentbus.envelope import Envelope
from intentbus.ids import derive_id
from intentbus.journal import Commit, CommitStatus, LogEntry, Outcome
from intentbus.ports import WorkflowStore
from intentbus.stages.common import StageDeps, StageResult, pipeline_fact, publish, retry_on_conflict
from intentbus.state import Status

ERROR_CHARS = 1000
"""An error's text is cut to this length in the fact and the log."""


class Cause(StrEnum):
    """The ``limit`` of the HumanReviewRequired: what sent the run to review."""

    RETRIES_EXHAUSTED = "retries_exhausted"
    LAST_RECEIVE = "last_receive"
    DEAD_LETTERED = "dead_lettered"


@dataclass(frozen=True)
class Failure:
    """A stage's repeated failure on one input, as the pause for review records it."""

    stage: str
    error: str
    attempts: int
    cause: Cause

    @classmethod
    def of(cls, stage: str, error: BaseException, attempts: int, cause: Cause) -> Failure:
        text = f"{type(error).__name__}: {error}"
        return cls(stage=stage, error=text[:ERROR_CHARS], attempts=attempts, cause=cause)

    @property
    def reason(self) -> str:
        what = {
            Cause.RETRIES_EXHAUSTED: "ran out of retries",
            Cause.LAST_RECEIVE: "failed on its queue's last receive",
            Cause.DEAD_LETTERED: "was dead-lettered",
        }[self.cause]
        return f"{self.stage} {what} after {self.attempts} attempt(s): {self.error}"


def pipeline_input(body: str) -> Envelope | None:
    """The pipeline fact a stage message carries, or ``None`` (not a pipeline fact: nothing to pause).

    Only the envelope in ``detail`` is read: the rest of the bus event is the stage's to judge."""
    try:
        detail = json.loads(body).get("detail")
        envelope = Envelope.model_validate(detail)
    except Exception:
        return None
    return envelope if envelope.source == facts.PIPELINE_SOURCE else None


def pause_for_failure(
    deps: StageDeps, store: WorkflowStore, incoming: Envelope, failure: Failure, *, again: bool = True
) -> StageResult | None:
    """Pauses ``incoming``'s run for review of ``failure``; ``None`` when there is no running run to pause
    (the caller lets the failure take its course: the run is already paused, ended or unknown).
    ``again=False``: when this input already paused the run, nothing is published again (the sweeper)."""

    def attempt() -> _Settled | None:
        snapshot = store.snapshot(incoming.tenant_id, incoming.run_id, failure.stage, incoming.id)
        state = snapshot.state
        if state is None or state.status is not Status.RUNNING:
            return _Settled(_already_paused(deps, store, incoming) if again else None)
        now = deps.clock.now()
        paused = state.model_copy(
            update={
                "version": state.version + 1,
                "status": Status.PAUSED,
                "reason": failure.reason,
                "updated_at": now,
            }
        )
        review = pipeline_fact(
            incoming,
            stage=f"{failure.stage}.failure",
            type_name=facts.HUMAN_REVIEW_REQUIRED,
            payload=facts.HumanReviewRequired(
                reason=failure.reason,
                limit=failure.cause.value,
                spend={"steps": state.steps_taken},
                stage=failure.stage,
                error=failure.error,
                attempts=failure.attempts,
            ),
            time=now,
            version=paused.version,
            index=paused.version,  # a run retried and failing again pauses again, with a new fact
        )
        entry = LogEntry(
            stage=failure.stage,
            input_id=derive_id(incoming.id, "failure", state.version),
            input_type=incoming.type,
            outcome=Outcome.PAUSED,
            at=now,
            version=paused.version,
            outputs=(review,),
            summary={
                "reason": failure.reason,
                "error": failure.error,
                "attempts": failure.attempts,
                "cause": failure.cause.value,
                "retry": incoming.to_json_dict(),
            },
        )
        commit = Commit(
            entry=entry,
            tenant_id=state.tenant_id,
            run_id=state.run_id,
            expected_version=state.version,
            state=paused,
        )
        result = store.commit(commit)
        if result.status is CommitStatus.VERSION_CONFLICT:
            return None
        if result.status is CommitStatus.ALREADY_RECORDED:
            assert result.entry is not None
            return _Settled(publish(deps, Outcome.DUPLICATE, incoming, result.entry.outputs, failure.reason))
        return _Settled(publish(deps, Outcome.PAUSED, incoming, entry.outputs, failure.reason))

    return retry_on_conflict(attempt, exhausted=lambda: _Settled(None)).result


@dataclass(frozen=True)
class _Settled:
    """What a pause attempt came to (``None``: no running run to pause); a conflict retries instead."""

    result: StageResult | None


def paused_for(store: WorkflowStore, incoming: Envelope) -> bool:
    """Whether ``incoming`` ever paused its run for review (answered or not)."""
    return any(
        isinstance(entry.summary.get("retry"), dict) and entry.summary["retry"].get("id") == incoming.id
        for entry in store.entries(incoming.tenant_id, incoming.run_id)
    )


def _already_paused(deps: StageDeps, store: WorkflowStore, incoming: Envelope) -> StageResult | None:
    """A redelivery of a failure that already paused the run: publish that pause's facts again."""
    for entry in reversed(store.entries(incoming.tenant_id, incoming.run_id)):
        retry = entry.summary.get("retry")
        if entry.outcome is Outcome.PAUSED and isinstance(retry, dict) and retry.get("id") == incoming.id:
            reason = entry.summary.get("reason")
            return publish(deps, Outcome.DUPLICATE, incoming, entry.outputs, str(reason))
        if entry.stage == "review" and entry.outputs:
            return None  # answered since: a new failure, not a redelivery of the paused one
    return None
