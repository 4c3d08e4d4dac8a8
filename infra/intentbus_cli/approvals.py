"""``intentbus approvals``: list, show, approve and reject, as the caller's AWS identity."""

from __future__ import annotations

import json

from intentbus.adapters.clients import AwsClients
from intentbus.approval_record import Approval
from intentbus.approvals import ApprovalDesk, Approver, Result
from intentbus_cli.desks import Target, desk_parts


def desk(target: Target) -> tuple[ApprovalDesk, AwsClients]:
    deps, store, clients = desk_parts(target)
    return ApprovalDesk(deps, store), clients


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
