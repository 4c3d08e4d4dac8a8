"""The workflow store on one DynamoDB table (single-table design, keys prefixed by tenant)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from intentbus.adapters.compression import compressed
from intentbus.adapters.key_shards import DUE_APPROVAL_SHARDS, RUN_LIST_SHARDS, shard_of
from intentbus.ids import key_part
from intentbus.journal import (
    ApprovalStatus,
    Authorization,
    Commit,
    CommitResult,
    CommitStatus,
    LogEntry,
    Snapshot,
    log_entry_json,
    proof_key,
)
from intentbus.model_shortcuts import json_text_of, validated_json
from intentbus.ports import SnapshotRequest
from intentbus.stored_entry import StoredEntry

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from intentbus.approval_record import Approval
    from intentbus.state import WorkflowState

STATE_SK = "STATE"
LOG_PREFIX = "LOG#"


def run_pk(tenant_id: str, run_id: str) -> str:
    return f"T#{tenant_id}#WF#{run_id}"


def log_sk(stage: str, input_id: str) -> str:
    return f"{LOG_PREFIX}{stage}#{input_id}"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int | float) -> dict[str, str]:
    return {"N": str(value)}


LEGACY_RUNS_INDEX = "gsi1"
"""Where state items written before ``gsi3`` are listed, under ``T#<tenant>#RUNS``: each leaves it the
next time its run moves (its item is put without ``gsi1pk``); runs that ended before stay there."""
RUNS_INDEX = "gsi3"
"""The run listing: keys only, so a state write moves it only when the run's status changes."""


def runs_shard_key(tenant_id: str, shard: int) -> str:
    return f"T#{tenant_id}#RUNS#{shard}"


def state_item(state: WorkflowState) -> dict[str, Any]:
    shard = shard_of(state.run_id, RUN_LIST_SHARDS)
    return {
        "pk": _s(run_pk(state.tenant_id, state.run_id)),
        "sk": _s(STATE_SK),
        "version": _n(state.version),
        "status": _s(state.status.value),
        "workflow": _s(state.workflow),
        "definition": _s(state.definition_version),
        # Stable while the status is: the index is written at start and on each change of status only.
        "gsi3pk": _s(runs_shard_key(state.tenant_id, shard)),
        "gsi3sk": _s(f"{state.status.value}#{state.started_at.isoformat()}#{state.run_id}"),
        "state": _s(json_text_of(state)),
    }


def state_from_item(item: Mapping[str, Any]) -> WorkflowState:
    """The run's state model, loaded with the first state read (execute's cold start reads none)."""
    from intentbus.state import WorkflowState

    return validated_json(WorkflowState, item["state"]["S"])


ENTRY_COMPRESSED = "entry_z"
"""A log entry's JSON, zlib-compressed (binary): its outputs repeat the envelopes' field names and ids,
so it shrinks ~2-3x, and a write bills per KB (twice in a transaction). Entries written before were
plain JSON in ``entry``; both are read."""


def entry_item(tenant_id: str, run_id: str, entry: LogEntry) -> dict[str, Any]:
    return {
        "pk": _s(run_pk(tenant_id, run_id)),
        "sk": _s(log_sk(entry.stage, entry.input_id)),
        "stage": _s(entry.stage),
        "outcome": _s(entry.outcome.value),
        "at": _s(entry.at.isoformat()),
        ENTRY_COMPRESSED: {"B": compressed(log_entry_json(entry).encode())},
    }


def is_entry_item(item: Mapping[str, Any]) -> bool:
    return ENTRY_COMPRESSED in item or "entry" in item


def entry_json(item: Mapping[str, Any]) -> str:
    """The log entry's JSON from its item, compressed or (written before compression) plain."""
    if ENTRY_COMPRESSED in item:
        return zlib.decompress(item[ENTRY_COMPRESSED]["B"]).decode()
    return str(item["entry"]["S"])


def entry_from_item(item: Mapping[str, Any]) -> LogEntry:
    return validated_json(LogEntry, entry_json(item))


RESOURCE_SK = "RESOURCE"
AUTH_PREFIX = "AUTH#"


def auth_sk(command_id: str) -> str:
    """A command sent directly keeps its producer's id, which may be long: hashed then."""
    return f"{AUTH_PREFIX}{key_part(command_id)}"


def authorization_item(tenant_id: str, run_id: str, authorization: Authorization) -> dict[str, Any]:
    return {
        "pk": _s(run_pk(tenant_id, run_id)),
        "sk": _s(auth_sk(authorization.command_id)),
        "digest": _s(authorization.digest),
        "authorization": _s(json_text_of(authorization)),
    }


def resource_pk(tenant_id: str, resource: str) -> str:
    return f"T#{tenant_id}#RES#{resource}"


APPROVAL_SK = "APPROVAL"
LEGACY_SWEEP = "APPROVALS#PENDING"
"""gsi2's one key before it was sharded: approvals written before are still found under it."""


def sweep_key(shard: int) -> str:
    """gsi2's keys, for the expiry sweep (a sparse index): pending approvals of every tenant by expiry,
    and decided ones whose events are not yet known to be published, by decision time."""
    return f"APPROVALS#DUE#{shard}"


def approval_pk(tenant_id: str, approval_id: str) -> str:
    return f"T#{tenant_id}#APPROVAL#{approval_id}"


def _by_time(at: datetime, approval_id: str) -> str:
    return f"{at.isoformat()}#{approval_id}"


def approval_item(approval: Approval) -> dict[str, Any]:
    item = {
        "pk": _s(approval_pk(approval.tenant_id, approval.approval_id)),
        "sk": _s(APPROVAL_SK),
        "status": _s(approval.status.value),
        "gsi1pk": _s(f"T#{approval.tenant_id}#APPROVALS#{approval.status.value}"),
        "gsi1sk": _s(_by_time(approval.expires_at, approval.approval_id)),
        "ttl": _n(int(approval.expires_at.timestamp()) + 90 * 86400),
        "approval": _s(approval.model_dump_json()),
    }
    if approval.sweep_key is not None:
        shard = shard_of(f"{approval.tenant_id}#{approval.approval_id}", DUE_APPROVAL_SHARDS)
        item |= {
            "gsi2pk": _s(sweep_key(shard)),
            "gsi2sk": _s(_by_time(approval.sweep_key, approval.approval_id)),
        }
    return item


BATCH_GET_KEYS = 100
"""BatchGetItem's limit of keys per request."""
BATCH_GET_ATTEMPTS = 2
"""A batch of snapshots asks for unprocessed keys once more; their records then read alone."""


def snapshot_keys(request: SnapshotRequest) -> list[tuple[str, str]]:
    """The (pk, sk) of every item a snapshot reads: the run's state, the stage's own entry, the proofs asked
    for and the authorization, all under the record's own run, and the resource under its tenant."""
    pk = run_pk(request.tenant_id, request.run_id)
    sort_keys = [STATE_SK, log_sk(request.stage, request.input_id)]
    sort_keys.extend(log_sk(stage, input_id) for stage, input_id in request.proofs)
    if request.authorization is not None:
        sort_keys.append(auth_sk(request.authorization))
    keys = [(pk, sk) for sk in dict.fromkeys(sort_keys)]
    if request.resource is not None:
        keys.append((resource_pk(request.tenant_id, request.resource), RESOURCE_SK))
    return keys


def _key_items(keys: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    return [{"pk": _s(pk), "sk": _s(sk)} for pk, sk in keys]


def snapshot_of(request: SnapshotRequest, found: Iterable[Mapping[str, Any]]) -> Snapshot:
    """The snapshot from the items read for ``request`` (only its own keys'; absent ones were not found).
    Proof entries are kept as stored (``StoredEntry``): a check reads what it needs of them."""
    own = log_sk(request.stage, request.input_id)
    state_found: Mapping[str, Any] | None = None
    entry = granted = None
    resource_version = None if request.resource is None else 0
    wanted = {log_sk(stage, input_id): (stage, input_id) for stage, input_id in request.proofs}
    proofs: dict[str, LogEntry | StoredEntry] = {}
    for item in found:
        sk = item["sk"]["S"]
        if sk == STATE_SK:
            state_found = item
        elif sk == RESOURCE_SK:
            resource_version = int(item["version"]["N"])
        elif sk.startswith(AUTH_PREFIX):
            granted = validated_json(Authorization, item["authorization"]["S"])
        elif sk == own:
            entry = entry_from_item(item)
        elif sk in wanted:
            stage, input_id = wanted[sk]
            proofs[proof_key(stage, input_id)] = StoredEntry(stage, input_id, partial(entry_json, item))
    if state_found is None:
        return Snapshot(None, entry, resource_version, proofs, granted)
    item = state_found
    return Snapshot.state_read_later(
        lambda: state_from_item(item),
        run_definition(item),
        entry,
        resource_version=resource_version,
        proofs=proofs,
        authorization=granted,
    )


def run_definition(item: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """The status, workflow and definition version a state item holds beside its state (``state_item``
    writes them in the same put); ``None`` for an item without them all: its state tells."""
    status, workflow, definition = item.get("status"), item.get("workflow"), item.get("definition")
    if status is None or workflow is None or definition is None:
        return None
    return status["S"], workflow["S"], definition["S"]


def _response(error: ClientError) -> dict[str, Any]:
    """The error's response as a plain dict: DynamoDB adds Item and CancellationReasons to it."""
    return dict(error.response)


class DynamoWorkflowStore:
    def __init__(self, table_name: str, client: DynamoDBClient) -> None:
        self._table = table_name
        self._client = client

    def snapshot(
        self,
        tenant_id: str,
        run_id: str,
        stage: str,
        input_id: str,
        *,
        resource: str | None = None,
        proofs: Sequence[tuple[str, str]] = (),
        authorization: str | None = None,
    ) -> Snapshot:
        request = SnapshotRequest(tenant_id, run_id, stage, input_id, resource, tuple(proofs), authorization)
        keys = snapshot_keys(request)
        found: list[dict[str, Any]] = []
        unread: dict[str, Any] = {self._table: {"Keys": _key_items(keys), "ConsistentRead": True}}
        while unread:
            response = self._client.batch_get_item(RequestItems=unread)
            found.extend(response["Responses"].get(self._table, []))
            unread = dict(response.get("UnprocessedKeys") or {})
        return snapshot_of(request, found)

    def snapshots(self, requests: Sequence[SnapshotRequest]) -> dict[SnapshotRequest, Snapshot]:
        """Every request's keys in one BatchGetItem per 100 distinct keys; unprocessed keys are asked once
        more, and a request whose keys are still unprocessed is left out of the answer."""
        keys_of = {request: snapshot_keys(request) for request in dict.fromkeys(requests)}
        wanted = list(dict.fromkeys(key for keys in keys_of.values() for key in keys))
        found, unread = read_keys_together(self._client, self._table, wanted)
        return {
            request: snapshot_of(request, [found[key] for key in keys if key in found])
            for request, keys in keys_of.items()
            if unread.isdisjoint(keys)
        }

    def commit(self, commit: Commit) -> CommitResult:
        log_put: dict[str, Any] = {
            "TableName": self._table,
            "Item": entry_item(commit.tenant_id, commit.run_id, commit.entry),
            "ConditionExpression": "attribute_not_exists(pk)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        actions: list[dict[str, Any]] = [{"Put": log_put}]
        actions.extend(self._state_actions(commit))
        if commit.approval is not None:
            actions.append({"Put": self._approval_put(commit)})
        if commit.authorization is not None:
            item = authorization_item(commit.tenant_id, commit.run_id, commit.authorization)
            actions.append({"Put": {"TableName": self._table, "Item": item}})
        if len(actions) == 1:
            return self._put_entry_only(log_put)
        try:
            self._client.transact_write_items(TransactItems=actions)  # type: ignore[arg-type]
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons: list[dict[str, Any]] = _response(error).get("CancellationReasons", [])
            if reasons and reasons[0].get("Code") == "ConditionalCheckFailed" and reasons[0].get("Item"):
                return CommitResult(
                    CommitStatus.ALREADY_RECORDED,
                    entry_from_item(reasons[0]["Item"]),
                )
            return CommitResult(CommitStatus.VERSION_CONFLICT)
        return CommitResult(CommitStatus.COMMITTED)

    def _approval_put(self, commit: Commit) -> dict[str, Any]:
        assert commit.approval is not None
        put: dict[str, Any] = {"TableName": self._table, "Item": approval_item(commit.approval)}
        if commit.approval_was is None:
            return put | {"ConditionExpression": "attribute_not_exists(pk)"}
        return put | {
            "ConditionExpression": "#status = :was",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {":was": _s(commit.approval_was.value)},
        }

    def approval(self, tenant_id: str, approval_id: str) -> Approval | None:
        response = self._client.get_item(
            TableName=self._table,
            Key={"pk": _s(approval_pk(tenant_id, approval_id)), "sk": _s(APPROVAL_SK)},
            ConsistentRead=True,
        )
        item = response.get("Item")
        if item is None:
            return None
        from intentbus.approval_record import Approval  # a stage's cold start never reads one

        return Approval.model_validate_json(item["approval"]["S"])

    def pending_approvals(self, tenant_id: str) -> list[Approval]:
        """The tenant's pending approvals, soonest expiry first."""
        pending = ApprovalStatus.PENDING.value
        return self._query_approvals("gsi1", "gsi1pk", f"T#{tenant_id}#APPROVALS#{pending}", None)

    def due_approvals(self, now: datetime) -> list[Approval]:
        """Approvals of every tenant the sweep must see by ``now``: pending ones that expired, and
        decided ones not yet announced (the index is eventually consistent: read each one again).
        One query per shard, and one of the key used before the index was sharded."""
        keys = [*(sweep_key(shard) for shard in range(DUE_APPROVAL_SHARDS)), LEGACY_SWEEP]
        found = [approval for key in keys for approval in self._query_approvals("gsi2", "gsi2pk", key, now)]
        return sorted(
            found, key=lambda approval: (approval.sweep_key or approval.expires_at, approval.approval_id)
        )

    def mark_announced(self, approval: Approval) -> None:
        announced = approval.model_copy(update={"announced": True})
        try:
            self._client.put_item(
                TableName=self._table,
                Item=approval_item(announced),
                ConditionExpression="#status = :status",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":status": _s(approval.status.value)},
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def _query_approvals(self, index: str, key: str, value: str, before: datetime | None) -> list[Approval]:
        condition = f"{key} = :key"
        values = {":key": _s(value)}
        if before is not None:
            condition += f" AND {index}sk < :before"
            values[":before"] = _s(before.isoformat())
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }
        from intentbus.approval_record import Approval  # a stage's cold start never reads one

        found: list[Approval] = []
        while True:
            response = self._client.query(**kwargs)
            found.extend(
                Approval.model_validate_json(item["approval"]["S"]) for item in response.get("Items", [])
            )
            if "LastEvaluatedKey" not in response:
                return found
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _state_actions(self, commit: Commit) -> list[dict[str, Any]]:
        key = {"pk": _s(run_pk(commit.tenant_id, commit.run_id)), "sk": _s(STATE_SK)}
        if commit.state is not None and commit.create:
            return [
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": state_item(commit.state),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            ]
        if commit.expected_version is None:
            return []
        condition = {
            "ConditionExpression": "version = :read",
            "ExpressionAttributeValues": {":read": _n(commit.expected_version)},
        }
        if commit.state is None:
            return [{"ConditionCheck": {"TableName": self._table, "Key": key, **condition}}]
        return [{"Put": {"TableName": self._table, "Item": state_item(commit.state), **condition}}]

    def _put_entry_only(self, log_put: dict[str, Any]) -> CommitResult:
        try:
            self._client.put_item(**log_put)
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            old = _response(error).get("Item")
            if old is None:
                raise
            return CommitResult(CommitStatus.ALREADY_RECORDED, entry_from_item(old))
        return CommitResult(CommitStatus.COMMITTED)

    def entries(self, tenant_id: str, run_id: str) -> list[LogEntry]:
        found: list[LogEntry] = []
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :log)",
            "ExpressionAttributeValues": {":pk": _s(run_pk(tenant_id, run_id)), ":log": _s(LOG_PREFIX)},
            "ConsistentRead": True,
        }
        while True:
            response = self._client.query(**kwargs)
            found.extend(entry_from_item(item) for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                break
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return sorted(found, key=lambda entry: (entry.at, entry.version))

    def state(self, tenant_id: str, run_id: str) -> WorkflowState | None:
        response = self._client.get_item(
            TableName=self._table,
            Key={"pk": _s(run_pk(tenant_id, run_id)), "sk": _s(STATE_SK)},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return None if item is None else state_from_item(item)

    def runs(self, tenant_id: str, status: str | None = None) -> list[WorkflowState]:
        """The tenant's runs, newest first: listed by the ``gsi3`` shards (and the ``gsi1`` key of runs
        that ended before it), each read again from its item. The index is eventually consistent: a
        run asked for by status is returned only if its item still has it."""
        keys: list[dict[str, Any]] = []
        for shard in range(RUN_LIST_SHARDS):
            keys.extend(self._index_items(RUNS_INDEX, runs_shard_key(tenant_id, shard), status))
        legacy = self._index_items(LEGACY_RUNS_INDEX, f"T#{tenant_id}#RUNS", status)
        states = [state_from_item(item) for item in legacy]
        states.extend(self._states({"pk": key["pk"], "sk": key["sk"]} for key in keys))
        if status:
            states = [state for state in states if state.status.value == status]
        unique = {state.run_id: state for state in states}
        return sorted(unique.values(), key=lambda state: state.updated_at, reverse=True)

    def _index_items(self, index: str, key: str, status: str | None) -> list[dict[str, Any]]:
        values = {":pk": _s(key)}
        condition = f"{index}pk = :pk"
        if status:
            values[":prefix"] = _s(f"{status}#")
            condition += f" AND begins_with({index}sk, :prefix)"
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }
        found: list[dict[str, Any]] = []
        while True:
            response = self._client.query(**kwargs)
            found.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return found
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _states(self, keys: Iterable[dict[str, Any]]) -> list[WorkflowState]:
        pending = list(keys)
        states: list[WorkflowState] = []
        while pending:
            batch, pending = pending[:100], pending[100:]
            request: dict[str, Any] = {self._table: {"Keys": batch, "ConsistentRead": True}}
            while request:
                response = self._client.batch_get_item(RequestItems=request)
                states.extend(state_from_item(item) for item in response["Responses"].get(self._table, []))
                request = dict(response.get("UnprocessedKeys") or {})
        return states


def read_keys_together(
    client: DynamoDBClient, table: str, wanted: list[tuple[str, str]], **read: Any
) -> tuple[dict[tuple[str, str], dict[str, Any]], set[tuple[str, str]]]:
    """Consistent BatchGetItems of ``wanted`` (pk, sk) keys, 100 a call, unprocessed keys asked once more:
    the items found by key, and the keys still unprocessed. ``read``: more of the request (a projection)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    unread: set[tuple[str, str]] = set()
    for start in range(0, len(wanted), BATCH_GET_KEYS):
        chunk = _key_items(wanted[start : start + BATCH_GET_KEYS])
        for _ in range(BATCH_GET_ATTEMPTS):
            request: dict[str, Any] = {table: {"Keys": chunk, "ConsistentRead": True, **read}}
            response = client.batch_get_item(RequestItems=request)
            for item in response["Responses"].get(table, []):
                found[(item["pk"]["S"], item["sk"]["S"])] = item
            unprocessed: dict[str, Any] = dict(response.get("UnprocessedKeys") or {})
            chunk = list(unprocessed.get(table, {}).get("Keys", []))
            if not chunk:
                break
        unread.update((key["pk"]["S"], key["sk"]["S"]) for key in chunk)
    return found, unread
