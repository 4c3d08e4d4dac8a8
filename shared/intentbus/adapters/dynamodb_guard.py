"""The execution guard on the workflow table: one TransactWriteItems per command, before its tool runs.

It checks the run exists, has not ended and was started under the workflow definition the command's
tool belongs to (a run stored before definitions were stored passes), that the command's authorization
is recorded with this fact's digest (an ALLOW verdict or an approver's decision wrote it), and, for a
command that names a resource, moves the resource item from the version the command was authorized at
to the next one. Of commands authorized at one version only the first to claim runs; the rest find the
version moved and are conflicts. A claim by the same command again (a retry after a crash) passes, so
a holder that died never blocks its resource: there is nothing to release, and a command authorized
after the claim reads the new version.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from intentbus.adapters.dynamodb_store import RESOURCE_SK, STATE_SK, auth_sk, resource_pk, run_pk
from intentbus.ports import Claim, ClaimRequest, ClaimStatus
from intentbus.state import LEGACY_CHECKS, TERMINAL, WorkflowState

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class ClaimActions:
    """A claim's actions for one TransactWriteItems, and how to read the reasons it was cancelled."""

    actions: list[dict[str, Any]]
    authorized: bool
    checked: int
    """How many of ``actions`` are checks (the resource update follows them)."""

    def refusal(self, reasons: list[dict[str, Any]]) -> Claim | None:
        """Why the guard refused, from the cancellation reasons of these actions (in order); ``None``
        if no check of its own failed (cancelled for another reason)."""
        failed = [r.get("Code") == "ConditionalCheckFailed" for r in reasons]
        if self.authorized and len(failed) > 1 and failed[1]:
            return Claim(ClaimStatus.NOT_AUTHORIZED)
        if failed and failed[0]:
            return _run_refused(reasons[0].get("Item", {}))
        if len(failed) > self.checked and failed[self.checked]:
            holder = reasons[self.checked].get("Item", {}).get("holder", {}).get("S")
            return Claim(ClaimStatus.CONFLICT, holder=holder)
        return None


class DynamoExecutionGuard:
    def __init__(self, table_name: str, client: DynamoDBClient) -> None:
        self._table = table_name
        self._client = client

    def claim(
        self,
        *,
        tenant_id: str,
        run_id: str,
        command_id: str,
        resource: str | None,
        seen_version: int | None,
        authorization: str | None,
        now: datetime,
        definition: tuple[str, str] | None = None,
    ) -> Claim:
        prepared = self.actions(
            ClaimRequest(
                tenant_id=tenant_id,
                run_id=run_id,
                command_id=command_id,
                resource=resource,
                seen_version=seen_version,
                authorization=authorization,
                now=now,
                definition=definition,
            )
        )
        try:
            self._client.transact_write_items(TransactItems=prepared.actions)  # type: ignore[arg-type]
        except ClientError as error:
            refused = cancelled_claim(error, prepared, offset=0)
            if refused is None:
                raise  # cancelled for another reason (a concurrent transaction): retried by SQS
            return refused
        return Claim(ClaimStatus.CLAIMED)

    def actions(self, request: ClaimRequest) -> ClaimActions:
        """The claim's actions, for ``claim`` or for a caller that folds them into its own transaction."""
        tenant_id, run_id, command_id = request.tenant_id, request.run_id, request.command_id
        resource, authorization, definition = request.resource, request.authorization, request.definition
        ended = {f":ended{i}": {"S": status.value} for i, status in enumerate(sorted(TERMINAL))}
        pk = {"S": run_pk(tenant_id, run_id)}
        run_check: dict[str, Any] = {
            "TableName": self._table,
            "Key": {"pk": pk, "sk": {"S": STATE_SK}},
            "ConditionExpression": f"attribute_exists(pk) AND NOT (#status IN ({', '.join(ended)}))",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": ended,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if definition is not None:
            run_check["ConditionExpression"] += (
                " AND #workflow = :workflow"
                " AND (attribute_not_exists(#definition) OR #definition = :definition)"
            )
            run_check["ExpressionAttributeNames"] |= {"#workflow": "workflow", "#definition": "definition"}
            run_check["ExpressionAttributeValues"] |= {
                ":workflow": {"S": definition[0]},
                ":definition": {"S": definition[1]},
            }
        actions: list[dict[str, Any]] = [{"ConditionCheck": run_check}]
        if authorization is not None:
            actions.append(
                {
                    "ConditionCheck": {
                        "TableName": self._table,
                        "Key": {"pk": pk, "sk": {"S": auth_sk(command_id)}},
                        "ConditionExpression": "digest = :digest",
                        "ExpressionAttributeValues": {":digest": {"S": authorization}},
                    }
                }
            )
        checked = len(actions)
        if resource is not None:
            seen = request.seen_version or 0
            actions.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": {"pk": {"S": resource_pk(tenant_id, resource)}, "sk": {"S": RESOURCE_SK}},
                        "UpdateExpression": "SET #version = :next, holder = :command, claimed_at = :now",
                        "ConditionExpression": (
                            "(attribute_not_exists(#version) AND :seen = :zero) "
                            "OR #version = :seen OR holder = :command"
                        ),
                        "ExpressionAttributeNames": {"#version": "version"},
                        "ExpressionAttributeValues": {
                            ":next": {"N": str(seen + 1)},
                            ":seen": {"N": str(seen)},
                            ":zero": {"N": "0"},
                            ":command": {"S": command_id},
                            ":now": {"S": request.now.isoformat()},
                        },
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            )
        return ClaimActions(actions, authorization is not None, checked)

    def predates_authorizations(self, tenant_id: str, run_id: str) -> bool:
        response = self._client.get_item(
            TableName=self._table,
            Key={"pk": {"S": run_pk(tenant_id, run_id)}, "sk": {"S": STATE_SK}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        if item is None:
            return False
        return WorkflowState.model_validate_json(item["state"]["S"]).checks == LEGACY_CHECKS


def cancelled_claim(error: ClientError, prepared: ClaimActions, *, offset: int) -> Claim | None:
    """The guard's refusal in a cancelled transaction whose claim actions start at ``offset``; ``None``
    if the transaction failed otherwise."""
    if error.response["Error"]["Code"] != "TransactionCanceledException":
        return None
    response: dict[str, Any] = dict(error.response)
    reasons: list[dict[str, Any]] = response.get("CancellationReasons", [])
    return prepared.refusal(reasons[offset:])


def _run_refused(item: dict[str, Any]) -> Claim:
    """Why the run's check failed, from the state item as it was: none, ended, or another definition."""
    status = item.get("status", {}).get("S")
    if status is None:
        return Claim(ClaimStatus.NOT_AUTHORIZED)
    if status in {ended.value for ended in TERMINAL}:
        return Claim(ClaimStatus.RUN_ENDED, run_status=status)
    started_under = (item.get("workflow", {}).get("S", ""), item.get("definition", {}).get("S", ""))
    return Claim(ClaimStatus.RETIRED, run_status=status, run_definition=started_under)
