"""A small workflow for the core's unit tests: a pure tool, two steps, fan-out in the second."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

RUNS: list[str] = []


class OrderPlaced(Payload):
    order_id: str
    amount: int


class OrderReserved(Payload):
    order_id: str
    reserved: int


class OrderShipped(Payload):
    order_id: str
    parcels: list[str]


class Reserve(Payload):
    order_id: str
    amount: int


class Ship(Payload):
    order_id: str
    warehouse: str


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.WRITES)
def reserve(command: Reserve, context: ToolContext) -> Mapping[str, Any]:
    RUNS.append(f"reserve:{command.order_id}")
    if command.order_id == "broken":
        raise ToolError("warehouse refused", retryable=False)
    return {"order_id": command.order_id, "reserved": command.amount}


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.WRITES)
def ship(command: Ship, context: ToolContext) -> Mapping[str, Any]:
    RUNS.append(f"ship:{command.order_id}:{command.warehouse}")
    return {"parcel": f"{command.warehouse}-{command.order_id}"}


def _reserve(context: DecisionContext) -> Decision:
    event = context.event
    assert isinstance(event, OrderPlaced)
    return Decision(
        agent="clerk",
        rationale="reserve stock",
        confidence=1.0,
        commands=(
            ProposedCommand(type="reserve", payload={"order_id": event.order_id, "amount": event.amount}),
        ),
    )


def _ship(context: DecisionContext) -> Decision:
    event = context.event
    assert isinstance(event, OrderReserved)
    return Decision(
        agent="clerk",
        rationale="ship from two warehouses",
        confidence=1.0,
        commands=tuple(
            ProposedCommand(type="ship", payload={"order_id": event.order_id, "warehouse": warehouse})
            for warehouse in ("north", "south")
        ),
    )


def _shipped(results: StepResults) -> Mapping[str, Any]:
    parcels = sorted(str(result["parcel"]) for result in results.values())
    return {"order_id": parcels[0].split("-", 1)[1], "parcels": parcels}


workflow = Workflow(
    name="orders",
    version="1",
    budget=Budget(max_depth=4),
    policy=Policy(
        rules=(
            Rule(
                id="reserve-small", command="reserve", effect=Effect.ALLOW, limits={"amount": Limit(max=100)}
            ),
            Rule(
                id="ship-needs-approval",
                command="ship",
                effect=Effect.REQUIRE_APPROVAL,
                environments=("production",),
            ),
            Rule(id="ship", command="ship", effect=Effect.ALLOW),
        )
    ),
)
workflow.event("OrderPlaced", OrderPlaced, starts=True)
workflow.event("OrderReserved", OrderReserved)
workflow.event("OrderShipped", OrderShipped)
workflow.command("reserve", Reserve, tool=reserve)
workflow.command("ship", Ship, tool=ship)
workflow.step(Step(on="OrderPlaced", agent=ScriptedAgent("clerk", _reserve), outcome="OrderReserved"))
workflow.step(
    Step(
        on="OrderReserved",
        agent=ScriptedAgent("clerk", _ship),
        outcome="OrderShipped",
        final=True,
        outcome_payload=_shipped,
    )
)
