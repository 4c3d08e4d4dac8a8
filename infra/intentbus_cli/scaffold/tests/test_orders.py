"""The orders workflow: in memory (milliseconds), on the local cloud (template.yaml on moto, every
stage as deployed), and under injected faults (crashes, throttles, redeliveries, forged facts)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from intentbus.catalog import Catalog
from intentbus.state import Status
from intentbus.testing import CloudPipeline, InMemoryPipeline
from intentbus_cli.main import main


def order(tenant: str, order_id: str, quantity: int) -> dict[str, Any]:
    return {
        "id": f"evt-{order_id}",
        "run_id": f"run-{order_id}",
        "type": "ORDER_REQUESTED",
        "source": "shop.example",
        "tenant_id": tenant,
        "payload": {"order_id": order_id, "sku": "MUG-RED", "quantity": quantity},
    }


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    """The orders table on moto, in this process: what the tool writes to in the in-memory tests."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="orders",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "tenant_id", "AttributeType": "S"},
                {"AttributeName": "order_id", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "tenant_id", "KeyType": "HASH"},
                {"AttributeName": "order_id", "KeyType": "RANGE"},
            ],
        )
        yield client


def test_the_workflow_module_registers_a_valid_workflow() -> None:
    assert "orders" in Catalog.from_modules("orders").workflows


def test_a_small_order_is_placed_once(intentbus_pipeline: InMemoryPipeline, dynamodb: Any) -> None:
    intentbus_pipeline.clients = {"dynamodb": dynamodb}
    intentbus_pipeline.settings["ORDERS_TABLE"] = "orders"

    intentbus_pipeline.emit(order("acme", "ord-1", quantity=3))
    intentbus_pipeline.emit(order("acme", "ord-1", quantity=3))  # the producer sent it twice
    intentbus_pipeline.run_until_idle()

    run = intentbus_pipeline.state("acme", "run-ord-1")
    assert run is not None
    assert run.status is Status.COMPLETED
    assert intentbus_pipeline.tool_runs == {"place_order": 1}
    item = dynamodb.get_item(TableName="orders", Key={"tenant_id": {"S": "acme"}, "order_id": {"S": "ord-1"}})
    assert item["Item"]["quantity"] == {"N": "3"}


def test_an_order_over_the_limit_is_denied_and_never_placed(
    intentbus_pipeline: InMemoryPipeline, dynamodb: Any
) -> None:
    intentbus_pipeline.clients = {"dynamodb": dynamodb}
    intentbus_pipeline.settings["ORDERS_TABLE"] = "orders"

    intentbus_pipeline.emit(order("acme", "ord-2", quantity=500))
    intentbus_pipeline.run_until_idle()

    run = intentbus_pipeline.state("acme", "run-ord-2")
    assert run is not None
    assert run.status is Status.DENIED
    assert intentbus_pipeline.tool_runs["place_order"] == 0


def test_a_malformed_order_is_quarantined_with_its_field(intentbus_pipeline: InMemoryPipeline) -> None:
    bad = order("acme", "ord-3", quantity=1)
    bad["payload"] = {**bad["payload"], "quantity": "many"}

    intentbus_pipeline.emit(bad)
    intentbus_pipeline.run_until_idle()

    (refused,) = intentbus_pipeline.quarantined
    assert refused.field == "payload.quantity"
    assert intentbus_pipeline.state("acme", "run-ord-3") is None


def test_on_the_local_cloud_the_order_lands_in_the_orders_table(intentbus_cloud: CloudPipeline) -> None:
    intentbus_cloud.emit([order("tenant_small", "ord-4", quantity=3), order("tenant_large", "ord-5", 500)])
    intentbus_cloud.run_until_idle()

    small = intentbus_cloud.state("tenant_small", "run-ord-4")
    large = intentbus_cloud.state("tenant_large", "run-ord-5")
    assert small is not None
    assert small.status is Status.COMPLETED
    assert large is not None
    assert large.status is Status.DENIED
    table = intentbus_cloud.cloud.topology.tables["OrdersTable"]
    placed = intentbus_cloud.cloud.clients.dynamodb().scan(TableName=table)["Items"]
    assert [(item["tenant_id"]["S"], item["order_id"]["S"]) for item in placed] == [("tenant_small", "ord-4")]


def test_under_faults_each_order_is_placed_exactly_once(capsys: pytest.CaptureFixture[str]) -> None:
    """A short run of `intentbus faults`: seeded schedules of crashes, throttles, timeouts,
    redeliveries and forged facts; the invariants must hold (for a long run: `make faults`)."""
    code = main(["faults", "--workflows", "orders", "--schedules", "4", "--seed", "1"])

    out = capsys.readouterr().out
    assert code == 0, out
    assert "invariant violations: 0" in out, out
