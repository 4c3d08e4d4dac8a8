"""Workflow state and its transitions: pure functions, no AWS."""

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

from intentbus.model_shortcuts import shallow_copy
from intentbus.run_status import LEGACY_CHECKS as LEGACY_CHECKS  # noqa: PLC0414 - still named here
from intentbus.run_status import RECORDED_CHECKS as RECORDED_CHECKS  # noqa: PLC0414 - still named here
from intentbus.run_status import TERMINAL as TERMINAL  # noqa: PLC0414 - still named here
from intentbus.run_status import Status as Status  # noqa: PLC0414 - still named here


class BudgetOverride(BaseModel):
    """Limits a person raised for one run when resuming it; ``None`` keeps the workflow's (or tenant's)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    max_depth: int | None = Field(default=None, ge=0)
    max_steps: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    deadline: timedelta | None = None
    """The run's whole deadline, from its start (not an extension from now)."""

    def over(self, earlier: "BudgetOverride | None") -> "BudgetOverride":
        """This override's limits, the ``earlier`` one's where this one sets none."""
        if earlier is None:
            return self
        mine = self.model_dump(exclude_none=True)
        return BudgetOverride.model_validate({**earlier.model_dump(exclude_none=True), **mine})

    @property
    def empty(self) -> bool:
        return not self.model_dump(exclude_none=True)


class Resumption(BaseModel):
    """A person's resume: at ``step_index``, only ``accepted_id`` (the paused input again) is decided."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    accepted_id: str
    step_index: int = Field(ge=0)
    by: str
    at: datetime


class WorkflowState(BaseModel):
    """One run of a workflow. ``version`` increases by one with every transition."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    tenant_id: str
    run_id: str
    workflow: str
    definition_version: str
    status: Status
    version: int = Field(ge=1)
    step_index: int = Field(ge=0)
    step_on: str
    """The event or command type that started the current step."""
    pending: tuple[str, ...] = ()
    """Ids of the current step's commands that have no outcome yet."""
    awaiting_approval: tuple[str, ...] = ()
    """Ids of pending commands that wait for a person's decision."""
    results: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The current step's results by command id."""
    steps_taken: int = Field(default=0, ge=0)
    tokens_used: int = Field(default=0, ge=0)
    max_depth: int = Field(default=0, ge=0)
    started_at: datetime
    updated_at: datetime
    reason: str | None = None
    budget_override: BudgetOverride | None = None
    """Limits raised by a person's resume; the budget check uses them over the workflow's."""
    resumed: Resumption | None = None
    """The last resume, which fences its step to the paused input re-published by the resume."""
    checks: int = Field(default=LEGACY_CHECKS, ge=0)
    """The trust rules the run started under. Runs started by this release (``RECORDED_CHECKS``) have every
    authorization recorded, and execute and record require it; a run started before (no such field)
    finishes under the earlier rules, its facts checked against the log by id and content."""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """pydantic's copy; a shallow one made directly (``intentbus.model_shortcuts.shallow_copy``)."""
        return super().model_copy(update=update, deep=True) if deep else shallow_copy(self, update)


def new_run(
    *, tenant_id: str, run_id: str, workflow: str, definition_version: str, step_on: str, now: datetime
) -> WorkflowState:
    """The state before the first step; it is first written together with that step."""
    return WorkflowState(
        tenant_id=tenant_id,
        run_id=run_id,
        workflow=workflow,
        definition_version=definition_version,
        status=Status.RUNNING,
        version=1,
        step_index=0,
        step_on=step_on,
        started_at=now,
        updated_at=now,
        checks=RECORDED_CHECKS,
    )


def begin_step(
    state: WorkflowState,
    *,
    step_on: str,
    command_ids: tuple[str, ...],
    tokens: int,
    depth: int,
    now: datetime,
    is_new: bool,
) -> WorkflowState:
    return state.model_copy(
        update={
            "version": state.version if is_new else state.version + 1,
            "step_index": state.step_index + 1,
            "step_on": step_on,
            "pending": command_ids,
            "results": {},
            "steps_taken": state.steps_taken + 1,
            "tokens_used": state.tokens_used + tokens,
            "max_depth": max(state.max_depth, depth),
            "updated_at": now,
        }
    )


def settle(state: WorkflowState, *, status: Status, reason: str | None, now: datetime) -> WorkflowState:
    return state.model_copy(
        update={
            "version": state.version + 1,
            "status": status,
            "reason": reason,
            "pending": (),
            "awaiting_approval": (),
            "updated_at": now,
        }
    )


def record_result(
    state: WorkflowState, *, command_id: str, result: dict[str, Any], now: datetime
) -> WorkflowState:
    return state.model_copy(
        update={
            "version": state.version + 1,
            "pending": tuple(pending for pending in state.pending if pending != command_id),
            "results": {**state.results, command_id: result},
            "updated_at": now,
        }
    )
