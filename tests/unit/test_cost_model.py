"""The cost model bills DynamoDB as AWS does: by item size, twice for transactions, index entries
by what the write changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from intentbus_faults.calls import Call
from tests.bench import prices
from tests.bench.capacity import CapacityMeter, item_size, read_units, write_units
from tests.bench.cost import (
    PROVISIONED_UTILISATION,
    _alternatives,
    dynamodb_floors,
    provisioned_dynamodb_usd,
)
from tests.bench.idle import idle_monthly

TABLE = {
    "Table": {
        "KeySchema": [{"AttributeName": "pk"}, {"AttributeName": "sk"}],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "runs",
                "KeySchema": [{"AttributeName": "rpk"}, {"AttributeName": "rsk"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    }
}


class FakeTable:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}

    def raw(self, operation: str, params: dict[str, Any]) -> Any:
        if operation == "DescribeTable":
            return TABLE
        key = (params["Key"]["pk"]["S"], params["Key"]["sk"]["S"])
        return {"Item": self.items[key]} if key in self.items else {}

    def put(self, params: dict[str, Any]) -> dict[str, Any]:
        item = params["Item"]
        self.items[(item["pk"]["S"], item["sk"]["S"])] = item
        return {}


def put(meter: CapacityMeter, table: FakeTable, item: dict[str, Any]) -> None:
    meter(Call("f", "dynamodb", "PutItem", {"TableName": "t", "Item": item}), table.put)


def s(text: str) -> dict[str, str]:
    return {"S": text}


def test_sizes_round_up_per_kilobyte_for_writes_and_per_4_kilobytes_for_reads() -> None:
    assert item_size({"pk": s("abc"), "n": {"N": "12345"}}) == 2 + 3 + 1 + 4
    assert write_units(1024) == 1
    assert write_units(1025) == 2
    assert write_units(0) == 1
    assert read_units(4097, consistent=True) == 2
    assert read_units(10, consistent=False) == 0.5


def test_an_index_is_written_only_when_the_write_changes_its_entry() -> None:
    table = FakeTable()
    meter = CapacityMeter(table.raw, ["t"])
    put(meter, table, {"pk": s("a"), "sk": s("1"), "body": s("x" * 1500)})
    assert meter.usage.write_units == {"t": 2}  # 1.5 KB, no index key: no index write
    put(meter, table, {"pk": s("a"), "sk": s("1"), "body": s("y"), "rpk": s("R"), "rsk": s("1")})
    assert meter.usage.index_writes == {"t/runs": 1}  # a new entry
    put(meter, table, {"pk": s("a"), "sk": s("1"), "body": s("z"), "rpk": s("R"), "rsk": s("1")})
    assert meter.usage.index_writes == {"t/runs": 1}  # keys only: a body change is not the index's
    put(meter, table, {"pk": s("a"), "sk": s("1"), "body": s("z"), "rpk": s("R"), "rsk": s("2")})
    assert meter.usage.index_writes == {"t/runs": 3}  # a moved key: delete + put
    assert meter.usage.write_units["t"] == 2 + 2 + 1 + 1  # the first write replaced 1.5 KB


def test_a_transaction_bills_two_units_per_kilobyte_per_item() -> None:
    table = FakeTable()
    meter = CapacityMeter(table.raw, ["t"])
    actions = [
        {"Put": {"TableName": "t", "Item": {"pk": s("a"), "sk": s("1"), "b": s("x" * 1100)}}},
        {"ConditionCheck": {"TableName": "t", "Key": {"pk": s("a"), "sk": s("2")}}},
    ]

    def commit(params: dict[str, Any]) -> dict[str, Any]:
        return table.put(params["TransactItems"][0]["Put"])

    meter(Call("f", "dynamodb", "TransactWriteItems", {"TransactItems": actions}), commit)
    assert meter.usage.write_units == {"t": 2 * 2 + 2 * 1}
    assert meter.usage.transactional_items == 2
    assert meter.usage.transactional_write_units == 2 * 2 + 2 * 1


def test_a_read_with_a_projection_bills_the_whole_items_size_and_a_missing_key_the_minimum() -> None:
    table = FakeTable()
    meter = CapacityMeter(table.raw, ["t"])
    big = {"pk": s("a"), "sk": s("1"), "status": s("RUNNING"), "body": s("x" * 5000)}
    table.items[("a", "1")] = big
    keys = [{"pk": s("a"), "sk": s("1")}, {"pk": s("a"), "sk": s("2")}]
    request = {"Keys": keys, "ConsistentRead": True, "ProjectionExpression": "sk, #status"}

    def projected(params: dict[str, Any]) -> dict[str, Any]:
        return {"Responses": {"t": [{"sk": big["sk"], "status": big["status"]}]}}

    meter(Call("f", "dynamodb", "BatchGetItem", {"RequestItems": {"t": request}}), projected)
    assert meter.usage.read_units == {"t": 2 + 1}  # 5 KB read whole (2 units), the missing key 1
    single = {"TableName": "t", "Key": keys[0], "ProjectionExpression": "sk"}
    meter(Call("f", "dynamodb", "GetItem", single), lambda params: {"Item": {"sk": big["sk"]}})
    assert meter.usage.read_units == {"t": 3 + 1}  # eventually consistent: 0.5 per 4 KB
    assert meter.usage.consistent_read_units == 3


def test_the_floor_bills_each_transactional_write_once_and_each_consistent_read_half() -> None:
    table = FakeTable()
    meter = CapacityMeter(table.raw, ["t"])
    put(meter, table, {"pk": s("a"), "sk": s("0"), "b": s("x" * 1100)})  # 2 units, standard
    actions = [{"Put": {"TableName": "t", "Item": {"pk": s("a"), "sk": s("1")}}}]
    transaction = {"TransactItems": actions}
    meter(Call("f", "dynamodb", "TransactWriteItems", transaction), lambda p: table.put(actions[0]["Put"]))
    key = {"pk": s("a"), "sk": s("1")}
    consistent = {"TableName": "t", "Key": key, "ConsistentRead": True}
    meter(Call("f", "dynamodb", "GetItem", consistent), lambda params: {"Item": key})
    meter(Call("f", "dynamodb", "GetItem", {"TableName": "t", "Key": key}), lambda params: {"Item": key})
    usage = meter.usage
    assert usage.table_write_units == 2 + 2
    assert usage.total_read_units == 1 + 0.5
    floors = dynamodb_floors(usage)
    write, read = prices.DYNAMODB_PER_WRITE_UNIT, prices.DYNAMODB_PER_READ_UNIT
    assert floors["standard_writes"] == pytest.approx((2 + 1) * write + 1.5 * read)
    assert floors["standard_writes_eventual_reads"] == pytest.approx((2 + 1) * write + 1.0 * read)


def test_idle_costs_are_read_from_the_template() -> None:
    idle = idle_monthly(Path(__file__).resolve().parents[2] / "template.yaml")
    assert idle["sqs_mappings"] == 5  # the five stages' mappings poll even when nothing flows
    assert idle["alarm_metrics"] >= 14
    parts = ("alarms", "dashboards", "kms_keys", "scheduled_functions", "idle_sqs_polls")
    assert idle["total"] >= sum(idle[part] for part in parts)


def test_provisioned_capacity_bills_the_units_used_plus_the_headroom_auto_scaling_keeps() -> None:
    # A million write units spread over time hold capacity-seconds; auto scaling provisions 1/0.7 of it.
    writes = provisioned_dynamodb_usd(1_000_000, 0)
    assert writes == pytest.approx(1_000_000 / 3600 * prices.DYNAMODB_PER_WCU_HOUR / PROVISIONED_UTILISATION)
    assert 0.4 < writes / (1_000_000 * prices.DYNAMODB_PER_WRITE_UNIT) < 0.45  # ~41% of on demand
    reads = provisioned_dynamodb_usd(0, 1_000_000)
    assert 0.4 < reads / (1_000_000 * prices.DYNAMODB_PER_READ_UNIT) < 0.45


def test_the_provisioned_minimum_capacity_is_priced_per_scaled_table_and_index() -> None:
    idle = idle_monthly(Path(__file__).resolve().parents[2] / "template.yaml")
    # Five scaled targets (the workflow table, its three indexes, the idempotency table), each at the
    # default minimum of 5 read and 5 write units, for a 30-day month; none of it in the default's total.
    per_target = 5 * 720 * (prices.DYNAMODB_PER_WCU_HOUR + prices.DYNAMODB_PER_RCU_HOUR)
    assert idle["provisioned_minimum_capacity"] == round(5 * per_target, 2)
    parts = ("alarms", "dashboards", "kms_keys", "scheduled_functions", "idle_sqs_polls")
    assert idle["total"] < sum(idle[part] for part in parts) + idle["provisioned_minimum_capacity"]


@pytest.mark.parametrize("invocations", [4.5, 5.5])
def test_step_functions_standard_is_five_task_states_a_step_whatever_intentbus_invokes(
    invocations: float,
) -> None:
    """The baseline runs the same five stages as states, each invoking one function: fewer intentbus
    invocations a step make intentbus cheaper, never the baseline."""
    per_step = {
        "lambda_invocations": invocations,
        "lambda_ms_modelled": 200.0,
        "traces": 0.25,
        "put_events_entries": invocations,
    }
    standard = _alternatives(per_step, 512)["step_functions_standard"]
    assert standard == pytest.approx(5 * 25.0 + 5 * 0.20)
