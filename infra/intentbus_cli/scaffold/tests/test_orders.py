"""The orders workflow on the local cloud: template.yaml on moto, every stage as deployed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.catalog import Catalog
from intentbus.state import Status, WorkflowState
from intentbus_local.cloud import LocalCloud

PROJECT = Path(__file__).resolve().parents[1]


def order(tenant: str, order_id: str, quantity: int) -> dict[str, Any]:
    envelope = {
        "id": f"evt-{order_id}",
        "type": "ORDER_REQUESTED",
        "tenant_id": tenant,
        "payload": {"order_id": order_id, "sku": "MUG-RED", "quantity": quantity},
    }
    return {"Source": "intentbus.cli", "DetailType": "ORDER_REQUESTED", "Detail": json.dumps(envelope)}


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(template_path=PROJECT / "template.yaml") as local:
        yield local


def test_the_workflow_module_registers_a_valid_workflow() -> None:
    assert "orders" in Catalog.from_modules("orders").workflows


def test_a_small_order_is_placed_in_the_orders_table(cloud: LocalCloud) -> None:
    cloud.put_events([order("tenant_small", "ord-1", quantity=3)])
    cloud.run_until_idle()

    (run,) = runs(cloud, "tenant_small")
    assert (run.workflow, run.status) == ("orders", Status.COMPLETED)
    item = cloud.clients.dynamodb().get_item(
        TableName=cloud.topology.tables["OrdersTable"],
        Key={"tenant_id": {"S": "tenant_small"}, "order_id": {"S": "ord-1"}},
    )["Item"]
    assert item["quantity"] == {"N": "3"}


def test_an_order_over_the_limit_is_denied_and_not_placed(cloud: LocalCloud) -> None:
    cloud.put_events([order("tenant_large", "ord-2", quantity=500)])
    cloud.run_until_idle()

    (run,) = runs(cloud, "tenant_large")
    assert (run.workflow, run.status) == ("orders", Status.DENIED)
    found = cloud.clients.dynamodb().get_item(
        TableName=cloud.topology.tables["OrdersTable"],
        Key={"tenant_id": {"S": "tenant_large"}, "order_id": {"S": "ord-2"}},
    )
    assert "Item" not in found


def runs(cloud: LocalCloud, tenant: str) -> list[WorkflowState]:
    store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
    return store.runs(tenant)
