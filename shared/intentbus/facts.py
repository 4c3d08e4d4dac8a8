"""The pipeline's own facts: what each stage publishes, with typed payloads.

Their names are the ``detail-type`` the EventBridge rules in template.yaml route on.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from intentbus.envelope import Envelope, Kind
from intentbus.policy import Verdict
from intentbus.registry import Payload, TypeSpec

PIPELINE_SOURCE = "intentbus.pipeline"
"""Source of stage facts; the inbound rule sends everything else to validate."""
WORKFLOW_SOURCE = "intentbus.workflow"
"""Source of the domain events a workflow publishes; they re-enter through validate."""

EVENT_ACCEPTED = "EventAccepted"
COMMAND_PROPOSED = "CommandProposed"
COMMAND_AUTHORIZED = "CommandAuthorized"
COMMAND_DENIED = "CommandDenied"
HUMAN_APPROVAL_REQUIRED = "HumanApprovalRequired"
COMMAND_EXECUTED = "CommandExecuted"
COMMAND_FAILED = "CommandFailed"
COMMAND_OUTCOME_UNKNOWN = "CommandOutcomeUnknown"
COMMAND_CONFLICTED = "CommandConflicted"
COMMAND_SKIPPED = "CommandSkipped"
HUMAN_REVIEW_REQUIRED = "HumanReviewRequired"
APPROVAL_EXPIRED = "ApprovalExpired"
WORKFLOW_COMPLETED = "WorkflowCompleted"
WORKFLOW_FAILED = "WorkflowFailed"
RUN_RESUMED = "RunResumed"
RUN_CANCELLED = "RunCancelled"
RUN_RETRIED = "RunRetried"


class EventAccepted(Payload):
    event: Envelope


class CommandProposed(Payload):
    command: Envelope
    decision_id: str
    agent: str | None = None
    """``None`` when another system sent the command directly."""
    producer: str | None = None
    """For a command sent directly: the principal ``ProducerBindings`` binds to its source, if any."""
    # The agent's own words, which may echo anything the event held: kept in the run's log and shown to
    # approvers, never written to a log line (sensitive: the type registry redacts them).
    rationale: str = Field(default="", json_schema_extra={"sensitive": True})
    evidence: dict[str, Any] = Field(default_factory=dict, json_schema_extra={"sensitive": True})
    confidence: float | None = None


class CommandAuthorized(Payload):
    command: Envelope
    verdict: Verdict
    resource_version: int | None = None
    """The version of the resource the command changes (its workflow names it) when the command was
    authorized: execute runs it only at that version."""


class CommandDenied(Payload):
    command: Envelope
    verdict: Verdict


class HumanApprovalRequired(Payload):
    command: Envelope
    verdict: Verdict
    approval_id: str
    expires_at: datetime


class CommandExecuted(Payload):
    command: Envelope
    result: dict[str, Any]
    reconciled: bool = False
    """True when the result was found by the tool's reconcile check after an attempt that lapsed."""


class CommandFailed(Payload):
    command: Envelope
    error: str


class CommandConflicted(Payload):
    """Another command changed the resource since this one was authorized: it was never run."""

    command: Envelope
    resource: str
    authorized_at_version: int
    holder: str | None
    """The command that holds the resource's current version."""
    reason: str


class CommandSkipped(Payload):
    """The run had already ended when the command reached execute: it was never run."""

    command: Envelope
    reason: str


class CommandOutcomeUnknown(Payload):
    """An earlier attempt may have half-happened and the tool cannot tell: a person decides."""

    command: Envelope
    reason: str


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


_MODELS: dict[str, type[Payload]] = {
    EVENT_ACCEPTED: EventAccepted,
    COMMAND_PROPOSED: CommandProposed,
    COMMAND_AUTHORIZED: CommandAuthorized,
    COMMAND_DENIED: CommandDenied,
    HUMAN_APPROVAL_REQUIRED: HumanApprovalRequired,
    COMMAND_EXECUTED: CommandExecuted,
    COMMAND_FAILED: CommandFailed,
    COMMAND_OUTCOME_UNKNOWN: CommandOutcomeUnknown,
    COMMAND_CONFLICTED: CommandConflicted,
    COMMAND_SKIPPED: CommandSkipped,
    HUMAN_REVIEW_REQUIRED: HumanReviewRequired,
    APPROVAL_EXPIRED: ApprovalExpired,
    WORKFLOW_COMPLETED: WorkflowCompleted,
    WORKFLOW_FAILED: WorkflowFailed,
    RUN_RESUMED: RunResumed,
    RUN_CANCELLED: RunCancelled,
    RUN_RETRIED: RunRetried,
}

PIPELINE_TYPES: tuple[TypeSpec, ...] = tuple(
    TypeSpec(name=name, kind=Kind.EVENT, model=model, owner="intentbus") for name, model in _MODELS.items()
)
