"""Parked quarantine messages and the repair budget, on the workflow table.

Keys, tenant first so ``dynamodb:LeadingKeys`` can fence a tenant as for every other item:
``T#<tenant>#REPAIR`` / ``<park id>`` for a message (its SQS id), and ``T#<tenant>#REPAIRBUDGET`` /
``<hour>`` for the tenant's repairs in that hour (a conditional counter). A parked item also carries
``gsi1pk = REPAIRS#PARKED#<shard>`` so an operator lists what waits across tenants with one query per
shard: a flood of malformed input parks under many keys, not one (items parked before the shards are
under ``REPAIRS#PARKED`` and still listed).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from intentbus.adapters.key_shards import shard_of
from intentbus.parked import Parked, ParkKind, ParkStatus

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

REPAIR_SK_TTL_DAYS = 30
"""How long a settled item (resubmitted or discarded) is kept; a parked one is kept until settled."""
BUDGET_TTL_SECONDS = 2 * 86400
PARKED_INDEX_KEY = "REPAIRS#PARKED"
PARKED_SHARDS = 8


def parked_index_key(shard: int) -> str:
    return f"{PARKED_INDEX_KEY}#{shard}"


_FIELDS = (
    "status",
    "stage",
    "quarantine_reason",
    "body",
    "kind",
    "reason",
    "field",
    "type_name",
    "source",
    "proposal",
    "resubmitted_id",
    "decided_by",
    "decided_reason",
)


def park_pk(tenant_id: str) -> str:
    return f"T#{tenant_id}#REPAIR"


def budget_pk(tenant_id: str) -> str:
    return f"T#{tenant_id}#REPAIRBUDGET"


class DynamoParkStore:
    def __init__(self, table: str, client: DynamoDBClient) -> None:
        self._table = table
        self._client = client

    def get(self, tenant_id: str, park_id: str) -> Parked | None:
        item = self._client.get_item(
            TableName=self._table,
            Key={"pk": {"S": park_pk(tenant_id)}, "sk": {"S": park_id}},
            ConsistentRead=True,
        ).get("Item")
        return None if item is None else _parked(item)

    def create(self, parked: Parked) -> bool:
        return self._put(parked, "attribute_not_exists(pk)", {})

    def settle(self, parked: Parked, *, expected: ParkStatus) -> bool:
        return self._put(parked, "#status = :expected", {":expected": {"S": expected.value}})

    def waiting(self, tenant_id: str) -> list[Parked]:
        return [parked for parked in self.every(tenant_id) if parked.status is ParkStatus.PARKED]

    def every(self, tenant_id: str) -> list[Parked]:
        """The tenant's items in every status (settled ones until their TTL), oldest first."""
        return self._query(
            {
                "TableName": self._table,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": park_pk(tenant_id)}},
            }
        )

    def waiting_everywhere(self) -> list[Parked]:
        """Every tenant's parked items (the unbound ones included), oldest first: for operators."""
        keys = [*(parked_index_key(shard) for shard in range(PARKED_SHARDS)), PARKED_INDEX_KEY]
        found = [
            parked
            for key in keys
            for parked in self._query(
                {
                    "TableName": self._table,
                    "IndexName": "gsi1",
                    "KeyConditionExpression": "gsi1pk = :pk",
                    "ExpressionAttributeValues": {":pk": {"S": key}},
                }
            )
        ]
        return sorted(found, key=lambda parked: parked.at)

    def _query(self, request: dict[str, Any]) -> list[Parked]:
        found: list[Parked] = []
        while True:
            page = self._client.query(**request)
            found.extend(_parked(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return sorted(found, key=lambda parked: parked.at)
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def take_repair(self, tenant_id: str, hour: str, limit: int) -> bool:
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"pk": {"S": budget_pk(tenant_id)}, "sk": {"S": hour}},
                UpdateExpression="ADD used :one SET #ttl = if_not_exists(#ttl, :ttl)",
                ConditionExpression="attribute_not_exists(used) OR used < :limit",
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":limit": {"N": str(limit)},
                    ":ttl": {"N": str(_epoch(hour) + BUDGET_TTL_SECONDS)},
                },
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def _put(self, parked: Parked, condition: str, values: dict[str, Any]) -> bool:
        names = {"#status": "status"} if "#status" in condition else {}
        request: dict[str, Any] = {
            "TableName": self._table,
            "Item": _item(parked),
            "ConditionExpression": condition,
        }
        if names:
            request["ExpressionAttributeNames"] = names
        if values:
            request["ExpressionAttributeValues"] = values
        try:
            self._client.put_item(**request)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True


def _epoch(hour: str) -> int:
    return int(datetime.fromisoformat(hour).timestamp())


def _item(parked: Parked) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pk": {"S": park_pk(parked.tenant_id)},
        "sk": {"S": parked.park_id},
        "tenant_id": {"S": parked.tenant_id},
        "at": {"S": parked.at.isoformat()},
    }
    for name in _FIELDS:
        value = getattr(parked, name)
        if value is not None:
            item[name] = {"S": str(value.value if isinstance(value, ParkStatus | ParkKind) else value)}
    if parked.decided_at is not None:
        item["decided_at"] = {"S": parked.decided_at.isoformat()}
    if parked.status is ParkStatus.PARKED:
        shard = shard_of(f"{parked.tenant_id}#{parked.park_id}", PARKED_SHARDS)
        item["gsi1pk"] = {"S": parked_index_key(shard)}
        item["gsi1sk"] = {"S": f"{parked.at.isoformat()}#{parked.tenant_id}#{parked.park_id}"}
    elif parked.status is not ParkStatus.ASKING:
        settled = parked.decided_at or parked.at
        item["ttl"] = {"N": str(int(settled.timestamp()) + REPAIR_SK_TTL_DAYS * 86400)}
    return item


def _parked(item: dict[str, Any]) -> Parked:
    text = {name: value["S"] for name, value in item.items() if "S" in value}
    return Parked(
        tenant_id=text["tenant_id"],
        park_id=text["sk"],
        status=ParkStatus(text["status"]),
        stage=text.get("stage", ""),
        quarantine_reason=text.get("quarantine_reason", ""),
        body=text.get("body", ""),
        at=datetime.fromisoformat(text["at"]),
        kind=ParkKind(text["kind"]) if "kind" in text else None,
        reason=text.get("reason", ""),
        field=text.get("field"),
        type_name=text.get("type_name"),
        source=text.get("source"),
        proposal=text.get("proposal"),
        resubmitted_id=text.get("resubmitted_id"),
        decided_by=text.get("decided_by"),
        decided_reason=text.get("decided_reason"),
        decided_at=datetime.fromisoformat(text["decided_at"]) if "decided_at" in text else None,
    )
