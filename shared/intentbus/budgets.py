"""Budget checks: a workflow that crosses a limit is paused for a person, never allowed to spend on."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from intentbus.definition import Budget
from intentbus.state import WorkflowState


@dataclass(frozen=True)
class BudgetBreach:
    limit: str
    reason: str
    spend: dict[str, int | float]


def check(budget: Budget, state: WorkflowState, *, depth: int, now: datetime) -> BudgetBreach | None:
    spend: dict[str, int | float] = {
        "depth": depth,
        "steps": state.steps_taken,
        "tokens": state.tokens_used,
        "elapsed_seconds": (now - state.started_at).total_seconds(),
    }
    if depth > budget.max_depth:
        return BudgetBreach("depth", f"causation depth {depth} is over the limit {budget.max_depth}", spend)
    if state.steps_taken >= budget.max_steps:
        return BudgetBreach(
            "steps", f"{state.steps_taken} steps taken, the limit is {budget.max_steps}", spend
        )
    if state.tokens_used >= budget.max_tokens:
        return BudgetBreach(
            "tokens", f"{state.tokens_used} tokens used, the limit is {budget.max_tokens}", spend
        )
    if now - state.started_at > budget.deadline:
        return BudgetBreach("deadline", f"the run is older than its deadline of {budget.deadline}", spend)
    return None
