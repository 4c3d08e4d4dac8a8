"""The person of an approval schedule: decides through the approvals API's function, as a browser would.

Each decision is an API Gateway request to ApprovalsFunction (so the function's AWS calls meet the same
injected faults as every stage); a 5xx answer is retried, as a person clicks again, a few times.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus_faults.schedule import ApprovalPlan, RunRef
from intentbus_local.cloud import LocalCloud
from intentbus_local.http_front import ApiDispatcher, LocalUser
from intentbus_local.lambda_runtime import Invocation

APPROVE_FUNCTION = "ApprovalsFunction"
AUTHORIZE_FUNCTION = "AuthorizeFunction"
_TRIES = 4


@dataclass(frozen=True)
class Attempt:
    decision: str
    status: int
    answer: str | None
    at: datetime
    """Virtual time the request was made."""


@dataclass
class Decided:
    approval_id: str
    expires_at: datetime
    attempts: list[Attempt] = field(default_factory=list)


class Approver:
    """Acts on each run's plan once, when its approval exists; remembers what it did for the checker."""

    def __init__(self, cloud: LocalCloud, store: DynamoWorkflowStore) -> None:
        self._cloud = cloud
        self._store = store
        self._dispatcher = ApiDispatcher(
            cloud.template,
            lambda function, event: cloud.invoke(function, event).response,
            LocalUser(email="approver@example.com", tenant_id="-"),
            cloud.clock.now,
        )
        self.plans: dict[RunRef, ApprovalPlan] = {}
        self.decided: dict[RunRef, Decided] = {}

    def reset(self, plans: dict[RunRef, ApprovalPlan]) -> None:
        self.plans = plans
        self.decided = {}

    def on_invocation(self, invocation: Invocation) -> None:
        """Observer: an early plan acts right after the authorize invocation that wrote its approval."""
        if invocation.function_logical_id != AUTHORIZE_FUNCTION:
            return
        for ref, plan in self.plans.items():
            if plan.early and ref not in self.decided:
                self.act(ref)

    def act_on_all(self) -> None:
        for ref in self.plans:
            if ref not in self.decided:
                self.act(ref)

    def act(self, ref: RunRef) -> None:
        plan = self.plans[ref]
        pending = [a for a in self._store.pending_approvals(ref.tenant_id) if a.run_id == ref.run_id]
        if not pending:
            return
        (approval,) = pending
        decided = self.decided[ref] = Decided(approval.approval_id, approval.expires_at)
        if plan.expiry_offset is not None:
            self._cloud.clock.advance_to(approval.expires_at.timestamp() + plan.expiry_offset)
            if plan.sweep_first:
                self._cloud.schedules.fire_due(self._cloud.clock.now())
        user = LocalUser(email=f"approver@{ref.tenant_id}.example", tenant_id=ref.tenant_id)
        for decision in plan.decisions:
            for _ in range(_TRIES):
                at = datetime.fromtimestamp(self._cloud.clock.now(), UTC)
                status, _, body = self._dispatcher.handle(
                    "POST",
                    f"/v1/tenants/{ref.tenant_id}/approvals/{approval.approval_id}/{decision}",
                    {},
                    json.dumps({"reason": f"{decision} in a fault schedule"}),
                    {"Content-Type": "application/json"},
                    user=user,
                )
                decided.attempts.append(Attempt(decision, status, _answer(body), at))
                if status < 500:
                    break


def _answer(body: bytes) -> str | None:
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    answer = parsed.get("answer") if isinstance(parsed, dict) else None
    return str(answer) if answer is not None else None
