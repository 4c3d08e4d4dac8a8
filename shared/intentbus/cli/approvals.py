"""``intentbus approvals``: list, show, approve and reject, as the caller's AWS identity."""

from __future__ import annotations

import json
from dataclasses import dataclass

from intentbus.adapters.clients import AwsClients
from intentbus.adapters.clock import SystemClock
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.adapters.eventbridge_bus import EventBridgeBus
from intentbus.approvals import ApprovalDesk, Approver, Result
from intentbus.catalog import Catalog
from intentbus.errors import ConfigurationError
from intentbus.journal import Approval
from intentbus.stages.common import StageDeps


class _NoQuarantine:
    def put(self, *, stage: str, reason: str, field: str | None, body: str, message_id: str | None) -> None:
        raise ConfigurationError(f"the approvals CLI quarantines nothing ({stage}: {reason})")


@dataclass(frozen=True)
class Target:
    table: str | None
    bus: str | None
    workflows: str
    environment: str
    endpoint_url: str | None = None


def desk(target: Target) -> tuple[ApprovalDesk, AwsClients]:
    if not target.table or not target.bus:
        raise ConfigurationError(
            "pass --table and --bus (or set WORKFLOW_TABLE and EVENT_BUS_NAME): see the stack outputs"
        )
    clients = AwsClients(endpoint_url=target.endpoint_url)
    deps = StageDeps(
        catalog=Catalog.from_modules(target.workflows),
        bus=EventBridgeBus(target.bus, clients.client("events")),
        quarantine=_NoQuarantine(),
        clock=SystemClock(),
        environment=target.environment,
    )
    return ApprovalDesk(deps, DynamoWorkflowStore(target.table, clients.client("dynamodb"))), clients


def caller(clients: AwsClients, tenant_id: str) -> Approver:
    """The CLI's caller, as STS names it; IAM fences which tenant's keys it may write."""
    arn = str(clients.client("sts").get_caller_identity()["Arn"])
    return Approver(id=arn, tenant_id=tenant_id, via="cli")


def summary(approval: Approval) -> str:
    command = approval.command
    return (
        f"{approval.approval_id}  {approval.status.value:<8}  {command.type} {json.dumps(command.payload)}  "
        f"run {approval.run_id}  proposed by {approval.proposed_by or 'another system'}  "
        f"expires {approval.expires_at.isoformat()}"
    )


def detail(approval: Approval) -> str:
    return json.dumps(approval.model_dump(mode="json"), indent=2, sort_keys=True)


def answer_line(result: Result) -> str:
    return f"{result.answer.value} ({result.http_status}): {result.reason}"
