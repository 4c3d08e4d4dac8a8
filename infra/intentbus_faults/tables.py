"""What one schedule left in the pipeline's tables, each read with one Scan.

The harness empties the tables after every schedule, so a Scan holds that schedule's items only. The
answers are the ones the store's own reads give (a GetItem per run state, a Query per run log, a Query
of the pending approvals' index, a GetItem per idempotency record): the same items, in the order
those Queries return them. One Scan per table replaces a few dozen requests per schedule.

The harness's cloud runs in its own process, so ``stored`` reads moto's table itself: the items a
consistent Scan answers, as botocore parses them, without serializing the table to JSON and parsing it
back (3% of a schedule's CPU). A table holding a value this does not copy as the round trip would
answer it (a binary set, a binary value moto holds as text, a type it does not know) is read with the
Scan instead.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from intentbus.adapters.dynamodb_store import LOG_PREFIX, STATE_SK, entry_from_item, run_pk
from intentbus.journal import LogEntry
from intentbus.state import WorkflowState

Item = dict[str, Any]


_SCALARS: dict[str, type] = {"S": str, "N": str, "BOOL": bool, "NULL": bool, "B": bytes}
"""Each as the parse answers it; a binary value moto holds as bytes goes out base64 and comes back as
the same bytes."""
_STRING_SETS = ("SS", "NS")


class _NotPlain(Exception):
    """A value ``_parsed`` does not answer as the Scan's round trip would."""


def stored(table: Any) -> list[Item] | None:
    """The items of moto's ``table`` (``moto.dynamodb.models.Table``) as ``scanned`` gets them; None when
    one holds a value not in plain wire form (read those with ``scanned``)."""
    try:
        return [{name: _parsed(value) for name, value in item.attrs.items()} for item in table.all_items()]
    except _NotPlain:
        return None


def holds_attribute(table: Any, name: str) -> bool:
    """Whether an item of moto's ``table`` has the attribute ``name`` (e.g. a sparse index's key)."""
    return any(name in item.attrs for item in table.all_items())


def _parsed(value: Any) -> Item:
    """What botocore parses moto's serialized ``DynamoType`` into."""
    kind, inner = getattr(value, "type", None), getattr(value, "value", None)
    if type(kind) is not str:
        raise _NotPlain(repr(value))
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        if type(inner) is not scalar:
            raise _NotPlain(kind)
        return {kind: inner}
    if kind in _STRING_SETS:
        if type(inner) is not list or any(type(member) is not str for member in inner):
            raise _NotPlain(kind)
        return {kind: list(inner)}
    if kind == "M" and type(inner) is dict:
        return {kind: {name: _parsed(member) for name, member in inner.items()}}
    if kind == "L" and type(inner) is list:
        return {kind: [_parsed(member) for member in inner]}
    raise _NotPlain(kind)


def scanned(client: Any, table: str) -> list[Item]:
    items: list[Item] = []
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items.extend(page.get("Items", []))
    return items


class WorkflowItems:
    """The workflow table as ``DynamoWorkflowStore.state``/``entries`` and the gsi1 Query read it."""

    def __init__(self, items: list[Item]) -> None:
        self._by_pk: dict[str, list[Item]] = defaultdict(list)
        self._by_gsi1pk: dict[str, list[Item]] = defaultdict(list)
        for item in items:
            self._by_pk[item["pk"]["S"]].append(item)
            if "gsi1pk" in item and "gsi1sk" in item:  # the index is sparse: both keys or not in it
                self._by_gsi1pk[item["gsi1pk"]["S"]].append(item)

    def state(self, tenant_id: str, run_id: str) -> WorkflowState | None:
        for item in self._by_pk.get(run_pk(tenant_id, run_id), []):
            if item["sk"]["S"] == STATE_SK:
                return WorkflowState.model_validate_json(item["state"]["S"])
        return None

    def entries(self, tenant_id: str, run_id: str) -> list[LogEntry]:
        logged = sorted(
            (
                item
                for item in self._by_pk.get(run_pk(tenant_id, run_id), [])
                if item["sk"]["S"].startswith(LOG_PREFIX)
            ),
            key=lambda item: str(item["sk"]["S"]),
        )
        return sorted((entry_from_item(item) for item in logged), key=lambda entry: (entry.at, entry.version))

    def by_gsi1(self, gsi1pk: str) -> list[Item]:
        return sorted(self._by_gsi1pk.get(gsi1pk, []), key=lambda item: str(item["gsi1sk"]["S"]))


def by_id(items: list[Item]) -> dict[str, Item]:
    """An idempotency table's items by their key."""
    return {str(item["id"]["S"]): item for item in items}
