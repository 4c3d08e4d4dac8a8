"""The README's workflow example, read from the README and run: it cannot drift from the API."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from intentbus import facts
from intentbus.adapters.clients import AwsClients
from intentbus.catalog import Catalog
from intentbus.envelope import Envelope
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline
from tests.fakes import raw_body

README = Path(__file__).parents[2] / "README.md"
TABLE = "orders"


def readme_example(heading: str = "## Writing a workflow") -> str:
    """The first python block of the README section under ``heading``."""
    section = README.read_text().split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, f"no python example under {heading!r}"
    return found.group(1)


@pytest.fixture
def orders_table(monkeypatch: pytest.MonkeyPatch, fake_aws_credentials: None) -> Iterator[Any]:
    monkeypatch.setenv("ORDERS_TABLE", TABLE)
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[
                {"AttributeName": "tenant_id", "KeyType": "HASH"},
                {"AttributeName": "order_id", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "tenant_id", "AttributeType": "S"},
                {"AttributeName": "order_id", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield dynamodb


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("readme_orders")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # pydantic resolves its models' module
    exec(compile(readme_example(), str(README), "exec"), module.__dict__)
    return module


def _order(order_id: str, amount: int) -> str:
    return raw_body(
        {"id": f"evt-{order_id}", "tenant_id": "acme", "payload": {"order_id": order_id, "amount": amount}},
        detail_type="OrderPlaced",
        source="shop.example",
    )


def test_the_readme_workflow_reserves_a_small_order_and_denies_a_large_one(
    example: types.ModuleType, orders_table: Any
) -> None:
    pipeline = InMemoryPipeline(Catalog([example.workflow]), clients=AwsClients())

    pipeline.run(_order("o-1", 5))
    pipeline.run(_order("o-2", 500))  # over the policy's limit of 100

    item = orders_table.get_item(TableName=TABLE, Key={"tenant_id": {"S": "acme"}, "order_id": {"S": "o-1"}})
    assert item["Item"]["reserved"] == {"N": "5"}
    assert "Item" not in orders_table.get_item(
        TableName=TABLE, Key={"tenant_id": {"S": "acme"}, "order_id": {"S": "o-2"}}
    )
    statuses = sorted(state.status for state in pipeline.runs("acme"))
    assert statuses == sorted([Status.COMPLETED, Status.DENIED])
    reserved = [e for e in pipeline.published if e.type == "OrderReserved"]
    assert [e.payload for e in reserved] == [{"order_id": "o-1", "reserved": 5}]


def _documented_key(run_id: str, step_index: int, hashed: object) -> str:
    """The README's formula, written out independently of intentbus.ids."""
    text = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "idem_" + hashlib.sha256(f"{run_id}:{step_index}:{text}".encode()).hexdigest()


def _proposed(pipeline: InMemoryPipeline) -> list[Envelope]:
    return [
        Envelope.model_validate(e.payload["command"])
        for e in pipeline.published
        if e.type == facts.COMMAND_PROPOSED
    ]


def test_the_idempotency_keys_are_the_readme_formulas(example: types.ModuleType, orders_table: Any) -> None:
    pipeline = InMemoryPipeline(Catalog([example.workflow]), clients=AwsClients())

    pipeline.run(_order("o-1", 5))  # the agent proposes: {type, payload}, at the step the decision opens
    (agent,) = _proposed(pipeline)
    assert agent.step_index == 1
    assert agent.idempotency_key == _documented_key(
        agent.run_id, 1, {"type": "reserve", "payload": {"order_id": "o-1", "amount": 5}}
    )

    direct = {"id": "cmd-1", "tenant_id": "acme", "payload": {"amount": 7, "order_id": "o-3ü"}}
    pipeline.run(raw_body(direct, detail_type="reserve", source="shop.example"))  # the seed formula
    sent = next(e for e in _proposed(pipeline) if e.id != agent.id)
    assert sent.idempotency_key == _documented_key(sent.run_id, 0, {"order_id": "o-3ü", "amount": 7})
