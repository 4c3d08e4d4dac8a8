"""Budget checks: a workflow that crosses a limit is paused for a person, never allowed to spend on.

A run's budget is, in order of precedence: the limits a person raised when resuming it (stored on
the run's state, ``WorkflowState.budget_override``), the workflow's budget for the run's tenant
(``Workflow.tenant_budgets``), the workflow's default (``Workflow.budget``). All three are in hand
when decide checks, so the check costs no DynamoDB call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from intentbus.definition import Budget, Workflow
from intentbus.frozen import Frozen, fields_repr, frozen_dataclass
from intentbus.state import BudgetOverride, WorkflowState


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class BudgetBreach(Frozen):
    """The budget limit a run crossed, why, and what it had spent."""

    limit: str
    reason: str
    spend: dict[str, int | float]

    def __init__(self, limit: str, reason: str, spend: dict[str, int | float]) -> None:
        object.__setattr__(self, "limit", limit)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "spend", spend)

    __repr__ = fields_repr


def for_tenant(workflow: Workflow, tenant_id: str) -> Budget:
    """The workflow's budget for the tenant: its tenant budget if it has one, else the default."""
    return workflow.tenant_budgets.get(tenant_id, workflow.budget)


def raised(budget: Budget, override: BudgetOverride | None) -> Budget:
    """``budget`` with the limits ``override`` sets."""
    if override is None:
        return budget
    return replace(
        budget,
        max_depth=budget.max_depth if override.max_depth is None else override.max_depth,
        max_steps=budget.max_steps if override.max_steps is None else override.max_steps,
        max_tokens=budget.max_tokens if override.max_tokens is None else override.max_tokens,
        deadline=budget.deadline if override.deadline is None else override.deadline,
    )


def for_run(workflow: Workflow, state: WorkflowState) -> Budget:
    """The budget that applies to this run now."""
    return raised(for_tenant(workflow, state.tenant_id), state.budget_override)


def describe(budget: Budget) -> dict[str, int | float]:
    """The limits as plain numbers, for facts and the log."""
    return {
        "max_depth": budget.max_depth,
        "max_steps": budget.max_steps,
        "max_tokens": budget.max_tokens,
        "deadline_seconds": budget.deadline.total_seconds(),
    }


def from_description(described: Mapping[str, Any]) -> Budget:
    """The budget ``describe`` wrote (as a pause records it)."""
    return Budget(
        max_depth=int(described["max_depth"]),
        max_steps=int(described["max_steps"]),
        max_tokens=int(described["max_tokens"]),
        deadline=timedelta(seconds=float(described["deadline_seconds"])),
    )


def spend(state: WorkflowState, *, depth: int, now: datetime) -> dict[str, int | float]:
    """What the run has spent, with the depth of the event about to be decided."""
    return {
        "depth": depth,
        "steps": state.steps_taken,
        "tokens": state.tokens_used,
        "elapsed_seconds": (now - state.started_at).total_seconds(),
    }


def check(budget: Budget, state: WorkflowState, *, depth: int, now: datetime) -> BudgetBreach | None:
    # What was spent is told only with a breach: a run within its budget (nearly every one) skips it.
    if depth > budget.max_depth:
        limit, reason = "depth", f"causation depth {depth} is over the limit {budget.max_depth}"
    elif state.steps_taken >= budget.max_steps:
        limit, reason = "steps", f"{state.steps_taken} steps taken, the limit is {budget.max_steps}"
    elif state.tokens_used >= budget.max_tokens:
        limit, reason = "tokens", f"{state.tokens_used} tokens used, the limit is {budget.max_tokens}"
    elif now - state.started_at > budget.deadline:
        limit, reason = "deadline", f"the run is older than its deadline of {budget.deadline}"
    else:
        return None
    return BudgetBreach(limit, reason, spend(state, depth=depth, now=now))
