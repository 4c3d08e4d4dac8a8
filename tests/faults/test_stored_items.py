"""The harness reads a schedule's items in moto's store: the same items, in the same order and form, as
the consistent Scan it replaced; what that copy cannot answer as the Scan would is read with the Scan."""

from __future__ import annotations

from typing import Any

import pytest
from moto.dynamodb.models.dynamo_type import DynamoType

from intentbus_faults import fanout_workflow, tables
from intentbus_faults.harness import FaultHarness
from intentbus_faults.invariants import Observation
from intentbus_faults.schedule import FANOUT, generate


class _Table:
    def __init__(self, *items: dict[str, Any]) -> None:
        self._items = [
            type("Item", (), {"attrs": {k: DynamoType(v) for k, v in item.items()}}) for item in items
        ]

    def all_items(self) -> list[Any]:
        return self._items


def test_each_table_read_in_the_store_equals_its_scan(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: dict[str, int] = {}

    def compare() -> None:
        for name, table in harness.cloud.topology.tables.items():
            stored = tables.stored(harness._moto_table(table))
            scanned = tables.scanned(harness.cloud.clients.dynamodb(), table)
            assert stored is not None, name
            assert repr(stored) == repr(scanned), name  # same items, order, attribute order and types
            compared[name] = compared.get(name, 0) + len(stored)
            binary = [value for item in stored for value in item.values() if "B" in value]
            compared["binary"] = compared.get("binary", 0) + len(binary)

    clear = harness._clear_tables

    def compared_then_cleared() -> None:
        compare()
        clear()

    monkeypatch.setattr(harness, "_clear_tables", compared_then_cleared)
    for seed in (2026, 2027, 2028):
        harness.run(generate(seed, drive=harness.drive))
    assert compared["WorkflowTable"] > 0
    assert compared["IdempotencyTable"] > 0
    assert compared["binary"] > 0  # the log entries' compressed bodies (``B``) were among them


def test_values_parse_as_botocore_parses_them() -> None:
    table = _Table(
        {
            "pk": {"S": "a"},
            "n": {"N": "1.50"},
            "z": {"B": b"\x00\xff"},
            "ok": {"BOOL": False},
            "none": {"NULL": True},
            "tags": {"SS": ["x", "y"]},
            "m": {"M": {"l": {"L": [{"N": "2"}, {"S": "s"}]}}},
        }
    )

    assert tables.stored(table) == [
        {
            "pk": {"S": "a"},
            "n": {"N": "1.50"},
            "z": {"B": b"\x00\xff"},
            "ok": {"BOOL": False},
            "none": {"NULL": True},
            "tags": {"SS": ["x", "y"]},
            "m": {"M": {"l": {"L": [{"N": "2"}, {"S": "s"}]}}},
        }
    ]


@pytest.mark.parametrize(
    "value",
    [{"BS": [b"\x00"]}, {"B": "AA=="}, {"N": 1}, {"M": {"inner": {"BS": [b"\x01"]}}}],
    ids=["binary set", "binary held as text", "number not text", "nested binary set"],
)
def test_a_value_it_does_not_copy_sends_the_table_to_the_scan(value: dict[str, Any]) -> None:
    assert tables.stored(_Table({"pk": {"S": "a"}, "v": value})) is None


def test_the_journal_counts_are_the_ones_a_get_item_reads(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = harness._read_journal
    checked: list[int] = []

    def read_then_compare(obs: Observation) -> None:
        read(obs)
        ddb, table = harness.cloud.clients.dynamodb(), harness.cloud.topology.tables["CrmTable"]
        for run in obs.runs:
            if run.ref.workflow != FANOUT:
                continue
            for command in run.proposed():
                sku = str(command.get("payload", {}).get("sku"))
                key = fanout_workflow.journal_item_key(run.ref.tenant_id, run.ref.run_id, sku)
                item = ddb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
                applied = int(item["applied"]["N"]) if item and "applied" in item else 0
                assert (
                    obs.journal[fanout_workflow.journal_key(run.ref.tenant_id, run.ref.run_id, sku)]
                    == applied
                )
                checked.append(applied)

    monkeypatch.setattr(harness, "_read_journal", read_then_compare)
    for seed in range(2026, 2034):
        harness.run(generate(seed, drive=harness.drive))
    assert any(checked)  # some reservations were applied, and their counts compared


def test_a_schedules_archived_facts_are_dropped_with_its_items(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.events.models import events_backends

    region = harness.cloud.clients.events().meta.region_name
    archives = events_backends[harness.cloud.topology.account_id][region].archives
    held: list[int] = []
    clear = harness._clear_archives

    def counted_then_cleared() -> None:
        held.append(sum(len(archive.events) for archive in archives.values()))
        clear()

    monkeypatch.setattr(harness, "_clear_archives", counted_then_cleared)
    harness.run(generate(2026, drive=harness.drive))
    assert held[0] > 0  # the pipeline archive kept the schedule's facts while it ran
    assert all(not archive.events for archive in archives.values())
