"""The pipeline's own facts: what each stage publishes, with typed payloads.

Their names are the ``detail-type`` the EventBridge rules in template.yaml route on. Each payload model
lives in the module of the stage that publishes it (``accepted``, ``proposed``, ``authorized``,
``executed``) or in ``runs`` (a run's end, approvals, reviews), and is imported on first use as
``facts.<Name>``: a stage's cold start creates only the models it reads or publishes, not all seventeen
(each class costs some tenths of a millisecond to create, even with its validator deferred).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from intentbus.envelope import Kind
from intentbus.registry import TypeSpec

if TYPE_CHECKING:
    from intentbus.facts.accepted import EventAccepted as EventAccepted
    from intentbus.facts.authorized import CommandAuthorized as CommandAuthorized
    from intentbus.facts.authorized import CommandDenied as CommandDenied
    from intentbus.facts.authorized import HumanApprovalRequired as HumanApprovalRequired
    from intentbus.facts.executed import CommandConflicted as CommandConflicted
    from intentbus.facts.executed import CommandExecuted as CommandExecuted
    from intentbus.facts.executed import CommandFailed as CommandFailed
    from intentbus.facts.executed import CommandOutcomeUnknown as CommandOutcomeUnknown
    from intentbus.facts.executed import CommandSkipped as CommandSkipped
    from intentbus.facts.proposed import CommandProposed as CommandProposed
    from intentbus.facts.runs import ApprovalExpired as ApprovalExpired
    from intentbus.facts.runs import HumanReviewRequired as HumanReviewRequired
    from intentbus.facts.runs import RunCancelled as RunCancelled
    from intentbus.facts.runs import RunResumed as RunResumed
    from intentbus.facts.runs import RunRetried as RunRetried
    from intentbus.facts.runs import WorkflowCompleted as WorkflowCompleted
    from intentbus.facts.runs import WorkflowFailed as WorkflowFailed
    from intentbus.registry import Payload

PIPELINE_SOURCE = "intentbus.pipeline"
"""Source of stage facts; the inbound rule sends everything else to validate."""
WORKFLOW_SOURCE = "intentbus.workflow"
"""Source of the domain events a workflow publishes (record); decide takes them straight from the pipeline
bus, record's entry their proof."""

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


_MODULE_OF: dict[str, str] = {
    EVENT_ACCEPTED: "accepted",
    COMMAND_PROPOSED: "proposed",
    COMMAND_AUTHORIZED: "authorized",
    COMMAND_DENIED: "authorized",
    HUMAN_APPROVAL_REQUIRED: "authorized",
    COMMAND_EXECUTED: "executed",
    COMMAND_FAILED: "executed",
    COMMAND_OUTCOME_UNKNOWN: "executed",
    COMMAND_CONFLICTED: "executed",
    COMMAND_SKIPPED: "executed",
    HUMAN_REVIEW_REQUIRED: "runs",
    APPROVAL_EXPIRED: "runs",
    WORKFLOW_COMPLETED: "runs",
    WORKFLOW_FAILED: "runs",
    RUN_RESUMED: "runs",
    RUN_CANCELLED: "runs",
    RUN_RETRIED: "runs",
}
"""Each fact's type name (its payload model's name too) and the module that defines the model."""

PIPELINE_TYPE_NAMES: frozenset[str] = frozenset(_MODULE_OF)


def model_of(name: str) -> type[Payload]:
    """The payload model of the pipeline fact ``name``, its module imported on first use."""
    model: type[Payload] = getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    return model


def pipeline_type(name: str) -> TypeSpec:
    """The registry's entry for the pipeline fact ``name`` (``TypeRegistry``'s ``deferred`` specs)."""
    return TypeSpec(name=name, kind=Kind.EVENT, model=model_of(name), owner="intentbus")


def __getattr__(name: str) -> type[Payload]:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    model = model_of(name)
    globals()[name] = model
    return model
