"""The facts about a whole run: its end, an expired approval, a pause for review and what a person did
about it."""

from datetime import datetime
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from intentbus.envelope import Envelope
from intentbus.registry import Payload


class ApprovalExpired(Payload):
    approval_id: str
    command: Envelope
    expired_at: datetime
    then: str
    """What the workflow definition said follows: ``cancel`` or ``escalate``; ``fail`` when the run's
    definition is no longer deployed."""


class HumanReviewRequired(Payload):
    reason: str
    limit: str
    spend: dict[str, int | float]
    stage: str | None = None
    """For a repeated failure: the stage whose input kept failing."""
    error: str | None = None
    """For a repeated failure: its last error."""
    attempts: int | None = None
    """For a repeated failure: how many times the stage tried."""

    @model_serializer(mode="wrap")
    def _without_unset_failure(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A budget's pause publishes the fact as it always did: the failure's fields only when set."""
        dumped: dict[str, Any] = handler(self)
        return {k: v for k, v in dumped.items() if not (k in _FAILURE_FIELDS and v is None)}


_FAILURE_FIELDS = frozenset({"stage", "error", "attempts"})


class RunResumed(Payload):
    """A person resumed a paused run; the paused input is published again to be decided once."""

    workflow: str
    reviewer: str
    reason: str
    review_id: str
    """The HumanReviewRequired fact this answers."""
    accepted_id: str
    """The EventAccepted published again for the paused event."""
    budget: dict[str, int | float]
    """The run's limits from now on."""
    spend: dict[str, int | float]
    """What the run had spent when it paused."""


class RunRetried(Payload):
    """A person retried a run paused by a repeated failure: the failed input is published again, and its
    stage gets its attempts afresh."""

    workflow: str
    reviewer: str
    reason: str
    review_id: str
    """The HumanReviewRequired fact this answers."""
    retried_id: str
    """The input published again (the same fact, with the same id)."""
    stage: str


class RunCancelled(Payload):
    """A person cancelled a paused run: it ends CANCELLED."""

    workflow: str
    reviewer: str
    reason: str
    review_id: str
    spend: dict[str, int | float]


class WorkflowCompleted(Payload):
    workflow: str
    steps: int = Field(ge=0)


class WorkflowFailed(Payload):
    workflow: str
    status: str
    reason: str
