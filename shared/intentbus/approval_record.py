"""One approval: a command that waits for a person's decision, and that decision once made.

Apart from ``intentbus.journal``: every stage imports the journal, and only authorize (when a command
needs a person) and the approvals service and API make or read approvals.
"""

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from intentbus.envelope import Envelope
from intentbus.journal import ApprovalStatus


class Approval(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    approval_id: str
    tenant_id: str
    run_id: str
    workflow: str
    command: Envelope
    proposed_at_version: int
    proposed_by: str | None
    """The agent's name (``None``: another system sent the command): a label, never compared."""
    proposers: tuple[str, ...] = ()
    """The principals that proposed the command (canonical ARNs: the stage roles, the producer bound to a
    direct command's source): none of them may decide it."""
    rationale: str = ""
    """The agent's rationale, kept apart from its evidence so the evidence cannot replace it."""
    evidence: dict[str, Any] = Field(default_factory=dict)
    """What the agent (a model, perhaps) offered as evidence: its words, unverified."""
    confidence: float | None = None
    status: ApprovalStatus = ApprovalStatus.PENDING
    requested_at: datetime
    expires_at: datetime
    decided_by: str | None = None
    """The approver's immutable id (a Cognito ``sub``, an IAM ARN)."""
    decided_by_label: str | None = None
    """Their email, as a label."""
    decided_at: datetime | None = None
    decision_reason: str | None = None
    resource_version: int | None = None
    """The resource's version when the command was proposed for approval: it runs only at that version."""
    announced: bool = False
    """Whether the events of its decision or expiry are published. Until they are, the expiry sweep
    lists the approval and publishes its recorded events again, so a crash between the decision's
    write and its publish cannot leave the run waiting forever."""

    @property
    def sweep_key(self) -> datetime | None:
        """When the expiry sweep is due to look at it: at expiry while PENDING, after the decision
        until it is announced, never after that."""
        if self.status is ApprovalStatus.PENDING:
            return self.expires_at
        return None if self.announced else (self.decided_at or self.expires_at)

    @property
    def decider(self) -> str:
        if self.decided_by_label and self.decided_by_label != self.decided_by:
            return f"{self.decided_by_label} ({self.decided_by})"
        return str(self.decided_by)

    def expired_at(self, now: datetime) -> bool:
        return now >= self.expires_at
