"""Direct tool call: another system asks for a tool by name; no model is involved.

TOOL_EXECUTION_REQUESTED goes validate → authorize → execute → record and ends the run with
TOOL_EXECUTION_COMPLETED.
"""

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from botocore.exceptions import ClientError
from pydantic import Field

from intentbus.definition import (
    RepeatSafety,
    Step,
    StepResults,
    ToolContext,
    ToolEffect,
    Workflow,
    tool,
)
from intentbus.policy import Effect, Policy, Rule
from intentbus.registry import Payload
from intentbus.tools import tool_error

REQUESTED = "TOOL_EXECUTION_REQUESTED"
COMPLETED = "TOOL_EXECUTION_COMPLETED"


class CrmRecordParameters(Payload):
    customer_id: str = Field(pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    status: Literal["lead", "qualified", "customer", "churned"]


class ToolExecutionRequested(Payload):
    tool_name: Literal["crm_record_upsert"]
    parameters: CrmRecordParameters


class ToolExecutionCompleted(Payload):
    tool_name: str
    result: dict[str, Any]


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.WRITES)
def run_requested_tool(command: ToolExecutionRequested, context: ToolContext) -> Mapping[str, Any]:
    """Upserts the tenant's CRM record: the same request applied twice leaves the same record. The
    table is keyed by tenant, so no tenant's command reaches another tenant's record."""
    parameters = command.parameters
    try:
        response = context.clients.client("dynamodb").update_item(
            TableName=context.setting("CRM_TABLE"),
            Key={"tenant_id": {"S": context.tenant_id}, "customer_id": {"S": parameters.customer_id}},
            UpdateExpression="SET #status = :status, updated_at = :now, last_idempotency_key = :key",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":status": {"S": parameters.status},
                ":now": {"S": datetime.now(UTC).isoformat()},
                ":key": {"S": context.idempotency_key},
            },
            ReturnValues="UPDATED_OLD",
        )
    except ClientError as error:
        raise tool_error(error, "the CRM upsert") from error
    previous = response.get("Attributes", {}).get("status", {}).get("S")
    return {
        "customer_id": parameters.customer_id,
        "status": parameters.status,
        "previous_status": previous,
        "created": previous is None,
    }


def _completed(results: StepResults) -> Mapping[str, Any]:
    (result,) = results.values()
    return {"tool_name": "crm_record_upsert", "result": dict(result)}


workflow = Workflow(
    name="direct_tool_call",
    version="1",
    policy=Policy(
        rules=(
            Rule(
                id="crm-upsert",
                command=REQUESTED,
                effect=Effect.ALLOW,
                where={"tool_name": ("crm_record_upsert",)},
                reason="CRM upserts are allowed for every tenant",
            ),
        )
    ),
)
workflow.command(
    REQUESTED,
    ToolExecutionRequested,
    tool=run_requested_tool,
    starts=True,
    resource=lambda command: f"crm:{command.parameters.customer_id}",
)
workflow.event(COMPLETED, ToolExecutionCompleted)
workflow.step(
    Step(
        on=REQUESTED,
        agent=None,
        outcome=COMPLETED,
        final=True,
        outcome_payload=_completed,
        tools=(REQUESTED,),
    )
)
