"""The orders workflow: a shop asks to place an order; policy allows small ones; the tool records it.

ORDER_REQUESTED goes validate -> authorize -> execute -> record and ends the run with ORDER_PLACED.
The tool writes the order to the table the template declares (OrdersTable, ORDERS_TABLE in the
execute function's environment). Register this module in the template's Workflows parameter.
"""

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError
from pydantic import Field

from intentbus.definition import RepeatSafety, Step, StepResults, ToolContext, ToolEffect, Workflow, tool
from intentbus.policy import Effect, Limit, Policy, Rule
from intentbus.registry import Payload
from intentbus.tools import tool_error

REQUESTED = "ORDER_REQUESTED"
PLACED = "ORDER_PLACED"
MAX_QUANTITY = 10


class OrderRequested(Payload):
    order_id: str = Field(pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    sku: str = Field(pattern=r"^[A-Z0-9\-]{1,32}$")
    quantity: int = Field(ge=1)


class OrderPlaced(Payload):
    order_id: str
    result: dict[str, Any]


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.WRITES)
def place_order(command: OrderRequested, context: ToolContext) -> Mapping[str, Any]:
    """Writes the tenant's order: the same request applied twice leaves the same item. The table is
    keyed by tenant, so no tenant's command reaches another tenant's orders."""
    try:
        context.clients.client("dynamodb").put_item(
            TableName=context.setting("ORDERS_TABLE"),
            Item={
                "tenant_id": {"S": context.tenant_id},
                "order_id": {"S": command.order_id},
                "sku": {"S": command.sku},
                "quantity": {"N": str(command.quantity)},
                "idempotency_key": {"S": context.idempotency_key},
            },
        )
    except ClientError as error:
        raise tool_error(error, "placing the order") from error
    return {"order_id": command.order_id, "sku": command.sku, "quantity": command.quantity}


def _placed(results: StepResults) -> Mapping[str, Any]:
    (result,) = results.values()
    return {"order_id": result["order_id"], "result": dict(result)}


workflow = Workflow(
    name="orders",
    version="1",
    policy=Policy(
        rules=(
            Rule(
                id="small-orders",
                command=REQUESTED,
                effect=Effect.ALLOW,
                limits={"quantity": Limit(max=MAX_QUANTITY)},
                reason=f"orders of at most {MAX_QUANTITY} items are placed without review",
            ),
        )
    ),
    examples=(  # sample inputs for `intentbus faults` (the stages never read them)
        {
            "type": REQUESTED,
            "source": "shop.example",
            "tenant_id": "tenant_demo",
            "payload": {"order_id": "ord-1", "sku": "MUG-RED", "quantity": 2},
        },
    ),
)
workflow.command(
    REQUESTED,
    OrderRequested,
    tool=place_order,
    starts=True,
    resource=lambda command: f"order:{command.order_id}",
)
workflow.event(PLACED, OrderPlaced)
workflow.step(
    Step(on=REQUESTED, agent=None, outcome=PLACED, final=True, outcome_payload=_placed, tools=(REQUESTED,))
)
