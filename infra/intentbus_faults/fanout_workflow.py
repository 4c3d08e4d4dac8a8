"""A fan-out workflow for the fault harness, written through the public API like any user's.

``FanoutRequested`` (an order with two lines) → one decision proposing two commands, one per SKU
(different resources) → ``StockReserved`` once both ran. Each tool's effect is a counter in a journal
item per (tenant, run, SKU) in the CRM table — ``ADD applied :one`` — which is *not* safe to repeat:
the final ``applied`` is how many times the effect really happened.

Both tools are ``RECONCILE``: ``reserve_stock`` has a check (is this idempotency key in the journal
item?), ``reserve_unchecked`` (a line with ``ledger: "legacy"``) has none, so an attempt whose
outcome is unknown pauses the run for a person.

Policy by order channel: ``web`` runs, ``partner`` needs approval, anything else is denied. A SKU
starting with ``discontinued`` fails the tool permanently (the run ends FAILED).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from pydantic import Field

from intentbus.definition import (
    Budget,
    Decision,
    DecisionContext,
    ProposedCommand,
    RepeatSafety,
    ScriptedAgent,
    Step,
    StepResults,
    ToolContext,
    ToolEffect,
    ToolError,
    Workflow,
    tool,
)
from intentbus.policy import Effect, Limit, Policy, Rule
from intentbus.registry import Payload
from intentbus.tools import aws_errors

MODULE = "intentbus_faults.fanout_workflow"
REQUESTED = "FanoutRequested"
RESERVED = "StockReserved"
COMMAND = "reserve_stock"
UNCHECKED = "reserve_unchecked"
JOURNAL_PREFIX = "fanout#"

EFFECT_REPEATS = 1
"""How many times the tool applies its effect per run: a test seam for "a tool that runs it twice"."""

Channel = Literal["web", "partner", "blocked"]


class OrderLine(Payload):
    sku: str = Field(pattern=r"^[a-z0-9\-]{1,40}$")
    quantity: int = Field(ge=1, le=1000)
    channel: Channel = "web"
    ledger: Literal["journal", "legacy"] = "journal"


class FanoutRequested(Payload):
    order_id: str = Field(min_length=1, max_length=64)
    lines: tuple[OrderLine, OrderLine]


class ReserveStock(Payload):
    order_id: str
    sku: str
    quantity: int = Field(ge=1)
    channel: Channel


class StockReserved(Payload):
    order_id: str
    reserved: dict[str, int]


TENANT_KEYED = False
"""Whether the CRM table's key has ``tenant_id`` beside ``customer_id`` (tool-owned data keyed by tenant):
the harness sets it from the table's key schema when it starts."""


def journal_key(tenant_id: str, run_id: str, sku: str) -> str:
    return f"{JOURNAL_PREFIX}{tenant_id}#{run_id}#{sku}"


def journal_item_key(tenant_id: str, run_id: str, sku: str) -> dict[str, Any]:
    """The journal item's DynamoDB key in the CRM table."""
    key: dict[str, Any] = {"customer_id": {"S": journal_key(tenant_id, run_id, sku)}}
    if TENANT_KEYED:
        key["tenant_id"] = {"S": tenant_id}
    return key


def _result(command: ReserveStock, applied: int) -> dict[str, Any]:
    return {
        "order_id": command.order_id,
        "sku": command.sku,
        "quantity": command.quantity,
        "applied": applied,
    }


def _reserve(command: ReserveStock, context: ToolContext) -> Mapping[str, Any]:
    """Counts the reservation in the journal: an ADD, so a second run shows as ``applied`` 2."""
    if command.sku.startswith("discontinued"):
        raise ToolError(f"{command.sku} is discontinued", retryable=False)
    applied = 0
    for _ in range(EFFECT_REPEATS):
        with aws_errors(f"reserving {command.sku}"):
            response = context.clients.client("dynamodb").update_item(
                TableName=context.setting("CRM_TABLE"),
                Key=journal_item_key(context.tenant_id, context.run_id, command.sku),
                UpdateExpression="ADD applied :one, idempotency_keys :key SET quantity = :quantity",
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":key": {"SS": [context.idempotency_key]},
                    ":quantity": {"N": str(command.quantity)},
                },
                ReturnValues="UPDATED_NEW",
            )
        applied = int(response["Attributes"]["applied"]["N"])
    return _result(command, applied)


def _reconcile(command: ReserveStock, context: ToolContext) -> Mapping[str, Any] | None:
    """The journal item names every idempotency key that reserved: the effect happened iff ours is there."""
    with aws_errors(f"checking the reservation of {command.sku}"):
        item = (
            context.clients.client("dynamodb")
            .get_item(
                TableName=context.setting("CRM_TABLE"),
                Key=journal_item_key(context.tenant_id, context.run_id, command.sku),
                ConsistentRead=True,
            )
            .get("Item")
        )
    if item is None or context.idempotency_key not in item.get("idempotency_keys", {}).get("SS", []):
        return None
    return _result(command, int(item["applied"]["N"]))


reserve_stock = replace(
    tool(repeat_safety=RepeatSafety.RECONCILE, reconcile=_reconcile, effect=ToolEffect.WRITES)(_reserve),
    name=COMMAND,
)
reserve_unchecked = replace(
    tool(repeat_safety=RepeatSafety.RECONCILE, effect=ToolEffect.WRITES)(_reserve), name=UNCHECKED
)


def _split(context: DecisionContext) -> Decision:
    event = context.event
    assert isinstance(event, FanoutRequested)
    return Decision(
        agent="splitter",
        rationale=f"reserve each line of {event.order_id}",
        confidence=0.95,
        commands=tuple(
            ProposedCommand(
                type=COMMAND if line.ledger == "journal" else UNCHECKED,
                payload={
                    "order_id": event.order_id,
                    "sku": line.sku,
                    "quantity": line.quantity,
                    "channel": line.channel,
                },
            )
            for line in event.lines
        ),
    )


def _reserved(results: StepResults) -> Mapping[str, Any]:
    return {
        "order_id": str(next(iter(results.values()))["order_id"]),
        "reserved": {str(result["sku"]): int(result["quantity"]) for result in results.values()},
    }


workflow = Workflow(
    name="fanout_reservation",
    version="1",
    budget=Budget(max_depth=4, max_steps=4),
    policy=Policy(
        rules=tuple(
            rule
            for command in (COMMAND, UNCHECKED)
            for rule in (
                Rule(
                    id=f"web-orders-{command}",
                    command=command,
                    effect=Effect.ALLOW,
                    where={"channel": ("web",)},
                    limits={"quantity": Limit(min=1, max=1000)},
                    reason="web orders reserve at once",
                ),
                Rule(
                    id=f"partner-orders-{command}",
                    command=command,
                    effect=Effect.REQUIRE_APPROVAL,
                    where={"channel": ("partner",)},
                    reason="partner orders need a person",
                ),
            )
        )
    ),
)
workflow.event(REQUESTED, FanoutRequested, starts=True)
workflow.event(RESERVED, StockReserved)
workflow.command(COMMAND, ReserveStock, tool=reserve_stock, resource=lambda command: f"stock:{command.sku}")
workflow.command(
    UNCHECKED, ReserveStock, tool=reserve_unchecked, resource=lambda command: f"stock:{command.sku}"
)
workflow.step(
    Step(
        on=REQUESTED,
        agent=ScriptedAgent("splitter", _split),
        outcome=RESERVED,
        final=True,
        outcome_payload=_reserved,
    )
)
