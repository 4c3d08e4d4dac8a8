"""DynamoDB capacity as AWS bills it, from the calls a run makes: read and write units by each item's
real size, and the index writes each table write causes.

The rules (DynamoDB developer guide, "Read/write capacity mode", "Global secondary indexes"):

* a standard write bills 1 write unit per KB of the larger of the item before and after; a
  transactional one 2 per KB per item, a ``ConditionCheck`` included; a failed conditional write bills
  as if it had written;
* a read bills per 4 KB: 0.5 (eventually consistent), 1 (strongly), 2 (transactional); a Query rounds
  the sum of the items it returns, a batch or a single get rounds each item, by the whole item's size
  even when a projection returns only some of its attributes;
* an index is written when a table write puts, changes or removes an item's index entry: a new entry
  1 write, a changed index key 2 (delete + put), a changed projected attribute 1, a removed entry 1;
  an index write bills 1 unit per KB of the entry (its projected attributes and keys). A write to an
  item that is in no index before and after costs no index write.

Item sizes: attribute names plus values (strings and binaries by length, numbers ~1 byte per two
digits plus one, maps and lists 3 bytes plus 1 per element), as DynamoDB documents them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from intentbus_faults.calls import Call, Proceed

Item = Mapping[str, Any]
RawCall = Callable[[str, dict[str, Any]], Any]
"""Makes a DynamoDB call that no recorder sees (the accounting's own reads)."""


def attribute_size(value: Mapping[str, Any]) -> int:
    (kind, inner), *_ = value.items()
    if kind in ("S", "B"):
        return len(inner.encode() if isinstance(inner, str) else inner)
    if kind == "N":
        digits = len(inner.lstrip("-").replace(".", "").strip("0")) or 1
        return (digits + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "BS"):
        return sum(len(x.encode() if isinstance(x, str) else x) for x in inner)
    if kind == "NS":
        return sum(attribute_size({"N": x}) for x in inner)
    if kind == "L":
        return 3 + sum(1 + attribute_size(x) for x in inner)
    if kind == "M":
        return 3 + sum(1 + len(name.encode()) + attribute_size(x) for name, x in inner.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind}")


def item_size(item: Item | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / 4096))
    if transactional:
        return 2.0 * units
    return float(units) if consistent else units / 2


@dataclass(frozen=True)
class Index:
    name: str
    keys: tuple[str, ...]
    projection: str
    included: tuple[str, ...] = ()

    def entry(self, item: Item | None, table_keys: tuple[str, ...]) -> dict[str, Any] | None:
        """The item as the index holds it, or None when the item is not in the index (sparse)."""
        if item is None or any(key not in item for key in self.keys):
            return None
        if self.projection == "ALL":
            return dict(item)
        kept = set(table_keys) | set(self.keys) | set(self.included)
        return {name: value for name, value in item.items() if name in kept}


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[str, ...]
    indexes: tuple[Index, ...]

    def key_of(self, item: Item) -> dict[str, Any]:
        return {name: item[name] for name in self.keys}


def describe(raw: RawCall, table_name: str) -> Table:
    description = raw("DescribeTable", {"TableName": table_name})["Table"]
    keys = tuple(key["AttributeName"] for key in description["KeySchema"])
    indexes = tuple(
        Index(
            name=index["IndexName"],
            keys=tuple(key["AttributeName"] for key in index["KeySchema"]),
            projection=index["Projection"]["ProjectionType"],
            included=tuple(index["Projection"].get("NonKeyAttributes", ())),
        )
        for index in description.get("GlobalSecondaryIndexes", ())
    )
    return Table(table_name, keys, indexes)


@dataclass
class Usage:
    """Units billed, by table and by index (``table/index``)."""

    write_units: dict[str, float] = field(default_factory=dict)
    read_units: dict[str, float] = field(default_factory=dict)
    consistent_read_units: float = 0.0
    """Of ``read_units``, what strongly consistent reads billed (twice what eventually consistent ones
    bill)."""
    index_writes: dict[str, int] = field(default_factory=dict)
    """Index entries put, changed or deleted (each billed by its size in ``write_units``)."""
    transactional_items: int = 0
    transactional_write_units: float = 0.0
    """Of ``write_units``, what transactions billed (twice what the same writes bill alone)."""
    standard_writes: int = 0
    by_call: dict[str, dict[str, float]] = field(default_factory=dict)
    """Units by the call that billed them (``function operation``): ``write_units``, ``read_units``."""
    call: str = ""
    """The call being billed."""

    def add_write(self, where: str, units: float) -> None:
        self.write_units[where] = self.write_units.get(where, 0.0) + units
        self._add_to_call("write_units", units)

    def add_read(self, where: str, units: float, *, consistent: bool) -> None:
        self.read_units[where] = self.read_units.get(where, 0.0) + units
        if consistent:
            self.consistent_read_units += units
        self._add_to_call("read_units", units)

    def _add_to_call(self, kind: str, units: float) -> None:
        billed = self.by_call.setdefault(self.call, {"write_units": 0.0, "read_units": 0.0})
        billed[kind] += units

    @property
    def table_write_units(self) -> float:
        return sum(units for where, units in self.write_units.items() if "/" not in where)

    @property
    def index_write_units(self) -> float:
        return sum(units for where, units in self.write_units.items() if "/" in where)

    @property
    def total_read_units(self) -> float:
        return sum(self.read_units.values())

    @property
    def total_index_writes(self) -> int:
        return sum(self.index_writes.values())


class CapacityMeter:
    """An interceptor (``intentbus_faults.calls.recording``) that bills every DynamoDB call it sees."""

    def __init__(self, raw: RawCall, tables: Iterable[str]) -> None:
        self._raw = raw
        self.tables = {name: describe(raw, name) for name in tables}
        self.usage = Usage()

    def __call__(self, call: Call, proceed: Proceed) -> Any:
        if call.service != "dynamodb":
            return proceed(call.params)
        handler = getattr(self, f"_{call.operation}", None)
        if handler is None:
            return proceed(call.params)
        self.usage.call = f"{call.function} {call.operation}"
        return handler(call.params, proceed)

    # ---------------------------------------------------------------- writes

    def _PutItem(self, params: dict[str, Any], proceed: Proceed) -> Any:
        table = self.tables[params["TableName"]]
        return self._writes(proceed, params, [(table, table.key_of(params["Item"]))], transactional=False)

    def _UpdateItem(self, params: dict[str, Any], proceed: Proceed) -> Any:
        return self._writes(
            proceed, params, [(self.tables[params["TableName"]], params["Key"])], transactional=False
        )

    _DeleteItem = _UpdateItem

    def _TransactWriteItems(self, params: dict[str, Any], proceed: Proceed) -> Any:
        targets: list[tuple[Table, dict[str, Any]]] = []
        for action in params["TransactItems"]:
            ((kind, body),) = action.items()
            table = self.tables[body["TableName"]]
            targets.append((table, table.key_of(body["Item"]) if kind == "Put" else body["Key"]))
        return self._writes(proceed, params, targets, transactional=True)

    def _BatchWriteItem(self, params: dict[str, Any], proceed: Proceed) -> Any:
        targets: list[tuple[Table, dict[str, Any]]] = []
        for name, requests in params["RequestItems"].items():
            table = self.tables[name]
            for request in requests:
                if "PutRequest" in request:
                    targets.append((table, table.key_of(request["PutRequest"]["Item"])))
                else:
                    targets.append((table, request["DeleteRequest"]["Key"]))
        return self._writes(proceed, params, targets, transactional=False)

    def _writes(
        self,
        proceed: Proceed,
        params: dict[str, Any],
        targets: list[tuple[Table, dict[str, Any]]],
        *,
        transactional: bool,
    ) -> Any:
        before = [self._get(table, key) for table, key in targets]
        try:
            response = proceed(params)
        except ClientError:
            for (table, _), old in zip(targets, before, strict=True):
                self._bill_table(table, old, None, transactional)
            raise
        for (table, key), old in zip(targets, before, strict=True):
            new = self._get(table, key)
            self._bill_table(table, old, new, transactional)
            self._bill_indexes(table, old, new)
        return response

    def _bill_table(self, table: Table, old: Item | None, new: Item | None, transactional: bool) -> None:
        units = write_units(max(item_size(old), item_size(new)))
        if transactional:
            self.usage.transactional_items += 1
            units *= 2
            self.usage.transactional_write_units += units
        else:
            self.usage.standard_writes += 1
        self.usage.add_write(table.name, units)

    def _bill_indexes(self, table: Table, old: Item | None, new: Item | None) -> None:
        for index in table.indexes:
            was, now = index.entry(old, table.keys), index.entry(new, table.keys)
            if was == now:
                continue
            where = f"{table.name}/{index.name}"
            writes: list[Item] = []
            if was is not None and now is not None:
                moved = any(was[key] != now[key] for key in index.keys)
                writes = [was, now] if moved else [now if item_size(now) >= item_size(was) else was]
            else:
                writes = [entry for entry in (was, now) if entry is not None]
            for entry in writes:
                self.usage.add_write(where, write_units(item_size(entry)))
            self.usage.index_writes[where] = self.usage.index_writes.get(where, 0) + len(writes)

    def _get(self, table: Table, key: dict[str, Any]) -> Item | None:
        item: Item | None = self._raw(
            "GetItem", {"TableName": table.name, "Key": key, "ConsistentRead": True}
        ).get("Item")
        return item

    # ---------------------------------------------------------------- reads

    def _GetItem(self, params: dict[str, Any], proceed: Proceed) -> Any:
        response = proceed(params)
        item = response.get("Item")
        if item is not None and _projected(params):
            item = self._get(self.tables[params["TableName"]], params["Key"])
        consistent = bool(params.get("ConsistentRead"))
        self.usage.add_read(
            params["TableName"], read_units(item_size(item), consistent=consistent), consistent=consistent
        )
        return response

    def _BatchGetItem(self, params: dict[str, Any], proceed: Proceed) -> Any:
        response = proceed(params)
        for name, returned in response.get("Responses", {}).items():
            request = params["RequestItems"][name]
            consistent = bool(request.get("ConsistentRead"))
            items = returned
            if _projected(request):
                table = self.tables[name]
                items = [self._get(table, key) for key in request["Keys"]]
            asked = len(request["Keys"])
            missing = asked - len(items)  # a key not found still bills the minimum
            units = sum(read_units(item_size(item), consistent=consistent) for item in items)
            units += missing * read_units(0, consistent=consistent)
            self.usage.add_read(name, units, consistent=consistent)
        return response

    def _TransactGetItems(self, params: dict[str, Any], proceed: Proceed) -> Any:
        response = proceed(params)
        for request, got in zip(params["TransactItems"], response.get("Responses", []), strict=False):
            size = item_size(got.get("Item"))
            units = read_units(size, consistent=True, transactional=True)
            # Not among the consistent reads the floor halves: a transactional read has no eventual form.
            self.usage.add_read(request["Get"]["TableName"], units, consistent=False)
        return response

    def _Query(self, params: dict[str, Any], proceed: Proceed) -> Any:
        response = proceed(params)
        size = sum(item_size(item) for item in response.get("Items", []))
        where = params["TableName"] + (f"/{params['IndexName']}" if "IndexName" in params else "")
        consistent = bool(params.get("ConsistentRead"))
        self.usage.add_read(where, read_units(size, consistent=consistent), consistent=consistent)
        return response

    _Scan = _Query


def _projected(request: Mapping[str, Any]) -> bool:
    """A read that returns some attributes only: it bills the whole item's size all the same."""
    return "ProjectionExpression" in request or "AttributesToGet" in request
