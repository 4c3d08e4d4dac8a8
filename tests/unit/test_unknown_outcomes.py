"""A tool that is unsafe to repeat is never run blindly after an attempt that died in progress."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from intentbus.catalog import Catalog
from intentbus.definition import (
    Decision,
    DecisionContext,
    ProposedCommand,
    Reconcile,
    RepeatSafety,
    ScriptedAgent,
    Step,
    Tool,
    ToolContext,
    Workflow,
)
from intentbus.ids import idempotency_key
from intentbus.policy import Effect, Policy, Rule
from intentbus.registry import Payload
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline
from tests.fakes import raw_body

CHARGES: list[str] = []
LEDGER: dict[str, int] = {}


class InvoiceDue(Payload):
    invoice: str
    cents: int


class Charged(Payload):
    invoice: str
    cents: int


class Charge(Payload):
    invoice: str
    cents: int


def charge(command: Charge, context: ToolContext) -> Mapping[str, Any]:
    CHARGES.append(command.invoice)
    LEDGER[command.invoice] = command.cents
    return {"invoice": command.invoice, "cents": command.cents}


def from_ledger(command: Charge, context: ToolContext) -> Mapping[str, Any] | None:
    if command.invoice not in LEDGER:
        return None
    return {"invoice": command.invoice, "cents": LEDGER[command.invoice]}


def billing(reconcile: Reconcile | None) -> Workflow:
    def decide(context: DecisionContext) -> Decision:
        event = context.event
        assert isinstance(event, InvoiceDue)
        return Decision(
            agent="biller",
            rationale="charge it",
            confidence=1.0,
            commands=(ProposedCommand(type="charge", payload=event.model_dump()),),
        )

    workflow = Workflow(
        name="billing",
        version="1",
        policy=Policy(rules=(Rule(id="charge", command="charge", effect=Effect.ALLOW),)),
    )
    workflow.event("InvoiceDue", InvoiceDue, starts=True)
    workflow.event("Charged", Charged)
    workflow.command("charge", Charge, tool=Tool("charge", charge, RepeatSafety.RECONCILE, reconcile))
    workflow.step(Step(on="InvoiceDue", agent=ScriptedAgent("biller", decide), outcome="Charged", final=True))
    return workflow


def due(invoice: str) -> str:
    return raw_body(
        {
            "id": f"evt-{invoice}",
            "tenant_id": "acme",
            "run_id": f"run-{invoice}",
            "type": "InvoiceDue",
            "payload": {"invoice": invoice, "cents": 1200},
        },
        detail_type="InvoiceDue",
    )


def lapsed_pipeline(reconcile: Reconcile | None, invoice: str) -> InMemoryPipeline:
    """A pipeline in which the command's first attempt died after its lock was taken."""
    CHARGES.clear()
    pipeline = InMemoryPipeline(Catalog([billing(reconcile)]))
    payload = {"type": "charge", "payload": {"invoice": invoice, "cents": 1200}}
    pipeline.runner.lapsed.add(f"acme#{idempotency_key(f'run-{invoice}', 1, payload)}")
    return pipeline


def test_without_a_reconcile_check_the_run_pauses_for_a_person_as_outcome_unknown() -> None:
    pipeline = lapsed_pipeline(None, "inv-1")
    pipeline.run(due("inv-1"))
    state = pipeline.store.states[("acme", "run-inv-1")]
    assert state.status is Status.PAUSED
    assert state.reason == "an earlier attempt of charge lapsed and charge cannot be reconciled"
    assert CHARGES == []
    assert [e.type for e in pipeline.bus.published][-1] == "HumanReviewRequired"


@pytest.mark.parametrize(("already_charged", "charges"), [(True, []), (False, ["inv-2"])])
def test_the_reconcile_check_decides_whether_the_effect_happened(
    already_charged: bool, charges: list[str]
) -> None:
    LEDGER.clear()
    if already_charged:
        LEDGER["inv-2"] = 1200
    pipeline = lapsed_pipeline(from_ledger, "inv-2")
    pipeline.run(due("inv-2"))
    assert pipeline.store.states[("acme", "run-inv-2")].status is Status.COMPLETED
    assert charges == CHARGES
    executed = next(e for e in pipeline.bus.published if e.type == "CommandExecuted")
    assert executed.payload["reconciled"] is already_charged
    assert executed.payload["result"] == {"invoice": "inv-2", "cents": 1200}
