"""The fault harness with Redis as execute's idempotency store (``intentbus faults --idempotency redis``).

A real ``redis-server`` per harness; the template's ``IdempotencyRedis*`` parameters point execute at it.
Each in-progress put, and each read-only command's completed put, reaches the call tracker as the
DynamoDB put it stands for (same record id), so the invariants attribute effects to records exactly as
on DynamoDB. Faults are injected at AWS calls only: Redis' own calls are never failed, but crashes and
timeouts around them still lapse leases.
The Redis adapter is imported only when Redis is the store: a project without the ``redis`` extra
runs the harness on DynamoDB.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from intentbus.adapters import idempotency
from intentbus_faults.calls import Call
from intentbus_local.redis_server import RedisServer, redis_server

STORES = ("dynamodb", "redis")


@dataclass
class Lapses:
    """In-progress puts that replaced a lapsed lease: attempts routed to the reconcile path."""

    replaced: list[str] = field(default_factory=list)


@dataclass
class RedisStore:
    server: RedisServer

    def parameters(self) -> dict[str, str]:
        return {
            "IdempotencyRedisEndpoint": self.server.host,
            "IdempotencyRedisPort": str(self.server.port),
            "IdempotencyRedisTls": "false",
        }

    def record(self, record_id: str) -> dict[str, Any]:
        """The record as the invariants read a DynamoDB item: attribute name -> plain value."""
        found = self._client.get(record_id)
        return {} if found is None else dict(json.loads(str(found)))

    @functools.cached_property
    def _client(self) -> Any:
        from intentbus.adapters import redis_idempotency

        return redis_idempotency.redis_client(self.server.host, self.server.port, tls=False)


@contextlib.contextmanager
def redis_store() -> Iterator[RedisStore]:
    with redis_server() as server:
        yield RedisStore(server)


@contextlib.contextmanager
def tracking_redis_puts(tracker: Any, table: str, lapses: Lapses) -> Iterator[None]:
    """``tracker``: the harness' ``CallTracker``; ``table``: the idempotency table's name."""
    from intentbus.adapters import redis_idempotency

    layer = redis_idempotency.LeasedCachePersistenceLayer
    put = layer._put_in_progress_record

    def tracked(self: Any, data_record: DataRecord) -> None:
        item = {"id": {"S": data_record.idempotency_key}, "status": {"S": data_record.status}}
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        call = Call(function, "dynamodb", "PutItem", {"TableName": table, "Item": item})

        def proceed(params: dict[str, Any]) -> None:
            put(self, data_record)
            if self.replaced_lapsed:
                lapses.replaced.append(data_record.idempotency_key)

        tracker(call, proceed)

    put_completed = layer.put_completed

    def tracked_completed(self: Any, data: dict[str, Any], result: dict[str, Any]) -> DataRecord | None:
        record = idempotency.completed_record(self, data, result)
        item = {"id": {"S": record.idempotency_key}, "status": {"S": record.status}}
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        call = Call(function, "dynamodb", "PutItem", {"TableName": table, "Item": item})

        def proceed(params: dict[str, Any]) -> None:
            held = put_completed(self, data, result)
            if held is not None:
                raise _Held(held)  # as DynamoDB's failed condition: no record taken

        try:
            tracker(call, proceed)
        except _Held as found:
            return found.record
        return None

    layer._put_in_progress_record = tracked  # type: ignore[method-assign]
    layer.put_completed = tracked_completed  # type: ignore[method-assign]
    try:
        yield
    finally:
        layer._put_in_progress_record = put  # type: ignore[method-assign]
        layer.put_completed = put_completed  # type: ignore[method-assign]


class _Held(Exception):
    def __init__(self, record: DataRecord) -> None:
        super().__init__(record.idempotency_key)
        self.record = record


@contextlib.contextmanager
def counting_dynamodb_lapses(lapses: Lapses) -> Iterator[None]:
    """On DynamoDB: every in-progress put whose ``ALL_OLD`` showed a lapsed lease it replaced."""
    client = idempotency.LapseWatchingClient
    put = client.put_item

    def counted(self: Any, **kwargs: Any) -> Any:
        response = put(self, **kwargs)
        if self.replaced_lapsed:
            lapses.replaced.append(str(kwargs["Item"]["id"]["S"]))
        return response

    client.put_item = counted  # type: ignore[method-assign]
    try:
        yield
    finally:
        client.put_item = put  # type: ignore[method-assign]
