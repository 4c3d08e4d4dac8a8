"""The repair function's decisions on one quarantine message, on an in-memory park store: what is never
shown to the model, the budget, and that a message is asked about at most once."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from intentbus.catalog import Catalog
from intentbus.ids import derive_id
from intentbus.parked import UNBOUND_TENANT, Parked, ParkKind, ParkStatus
from intentbus.producers import ProducerBindings
from intentbus.repair import RepairRequest
from intentbus.repair_worker import RepairWorker
from intentbus.workflows import direct_tool

NOW = datetime(2026, 12, 4, 14, 5, tzinfo=UTC)
ACCOUNT = "123456789012"
TYPES = Catalog([direct_tool.workflow]).types


class MemoryParks:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Parked] = {}
        self.budget: dict[tuple[str, str], int] = {}

    def get(self, tenant_id: str, park_id: str) -> Parked | None:
        return self.items.get((tenant_id, park_id))

    def create(self, parked: Parked) -> bool:
        return self.items.setdefault((parked.tenant_id, parked.park_id), parked) is parked

    def settle(self, parked: Parked, *, expected: ParkStatus) -> bool:
        key = (parked.tenant_id, parked.park_id)
        if key not in self.items or self.items[key].status is not expected:
            return False
        self.items[key] = parked
        return True

    def waiting(self, tenant_id: str) -> list[Parked]:
        return [p for (t, _), p in self.items.items() if t == tenant_id and p.status is ParkStatus.PARKED]

    def take_repair(self, tenant_id: str, hour: str, limit: int) -> bool:
        used = self.budget.get((tenant_id, hour), 0)
        if used >= limit:
            return False
        self.budget[(tenant_id, hour)] = used + 1
        return True


class Model:
    def __init__(self, *answers: Mapping[str, Any]) -> None:
        self.answers = list(answers)
        self.asked: list[RepairRequest] = []

    def repair_input(self, request: RepairRequest) -> Mapping[str, Any]:
        self.asked.append(request)
        return self.answers.pop(0)


class Submitted(list[dict[str, str]]):
    def __call__(self, entry: Mapping[str, str]) -> None:
        self.append(dict(entry))


def detail(status: str = "prospect", **extra: Any) -> dict[str, Any]:
    parameters = {"customer_id": "cust_1", "status": status}
    return {
        "id": "crm-1",
        "type": "TOOL_EXECUTION_REQUESTED",
        "source": "crm.example",
        "tenant_id": "acme",
        "payload": {"tool_name": "crm_record_upsert", "parameters": parameters},
        **extra,
    }


def message(event_detail: Mapping[str, Any], *, stage: str = "validate", account: str = ACCOUNT) -> str:
    event = {"detail-type": "TOOL_EXECUTION_REQUESTED", "source": "crm.example", "account": account}
    body = json.dumps({**event, "detail": dict(event_detail)})
    return json.dumps(
        {"stage": stage, "reason": "payload.parameters.status: Input should be ...", "body": body}
    )


def worker(model: Model | None, *, bindings: str = "crm.example=acme", budget: int = 5) -> RepairWorker:
    return RepairWorker(
        types=TYPES,
        producers=ProducerBindings.parse(bindings),
        store=MemoryParks(),
        repairer=model,
        submit=Submitted(),
        now=lambda: NOW,
        budget_per_hour=budget,
        own_account=ACCOUNT,
    )


def parked(work: RepairWorker, tenant: str = "acme") -> Parked:
    (found,) = work.store.waiting(tenant)
    return found


def test_a_valid_repair_is_resubmitted_once_and_its_item_says_so() -> None:
    model = Model(detail("lead"))
    submitted = Submitted()
    work = replace(worker(model), submit=submitted)
    assert work.handle("m-1", message(detail())) == "resubmitted"
    assert work.handle("m-1", message(detail())) == "resubmitted"  # redelivered: not asked again
    assert len(model.asked) == 1
    (entry,) = submitted
    sent = json.loads(entry["Detail"])
    assert (entry["Source"], sent["causation_id"], sent["id"]) == (
        "crm.example",
        "crm-1",
        derive_id("crm-1", "repair"),
    )


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        ("another stage's quarantine", ParkKind.NOT_REPAIRABLE),
        ("a repaired input refused again", ParkKind.REFUSED_AGAIN),
        ("no model configured", ParkKind.MODEL_ERROR),
    ],
)
def test_what_the_model_is_never_shown_is_parked_at_once(case: str, kind: ParkKind) -> None:
    model = Model()
    work = worker(None if case == "no model configured" else model)
    body = {
        "another stage's quarantine": message(detail(), stage="decide"),
        "a repaired input refused again": message(
            {**detail(), "id": derive_id("crm-0", "repair"), "causation_id": "crm-0"}
        ),
        "no model configured": message(detail()),
    }[case]
    assert work.handle("m-1", body) == kind.value
    assert parked(work).kind is kind
    assert model.asked == []
    assert work.store.budget == {}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("bindings", "account"),
    [("crm.example=globex", ACCOUNT), ("crm.example=acme", "999999999999"), ("", ACCOUNT)],
    ids=["bound to another tenant", "another account", "nobody bound"],
)
def test_an_input_whose_producer_is_not_bound_to_its_tenant_waits_for_an_operator(
    bindings: str, account: str
) -> None:
    """Attack: an unbound producer claims tenant acme; its input must not reach acme's people or the model."""
    model = Model()
    work = worker(model, bindings=bindings)
    assert work.handle("m-1", message(detail(), account=account)) == "not_repairable"
    assert work.store.waiting("acme") == []
    assert parked(work, UNBOUND_TENANT).reason == "its tenant is missing or not bound to its producer"
    assert model.asked == []


def test_a_body_that_is_not_a_quarantine_record_is_kept_for_an_operator() -> None:
    work = worker(Model())
    assert work.handle("m-1", "not json {") == "not_repairable"
    assert parked(work, UNBOUND_TENANT).body == "not json {"


def test_a_message_left_asking_is_parked_as_interrupted_and_never_asked_again() -> None:
    model = Model(detail("lead"))
    work = worker(model)
    asking = Parked(
        tenant_id="acme",
        park_id="m-1",
        status=ParkStatus.ASKING,
        stage="validate",
        quarantine_reason="r",
        body="{}",
        at=NOW,
    )
    work.store.create(asking)
    assert work.handle("m-1", message(detail())) == "interrupted"
    assert model.asked == []
    assert parked(work) == replace(
        asking,
        status=ParkStatus.PARKED,
        kind=ParkKind.INTERRUPTED,
        reason="the repair was interrupted before it finished; the model is not asked again",
    )
