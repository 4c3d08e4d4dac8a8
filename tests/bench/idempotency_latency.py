"""Execute's added latency per record for each idempotency store, side by side in one run.

Each record is one command through the idempotency runner with the execution guard's claim as its
work (what execute does before a tool), against the guard's claim alone (what execute would pay with
no idempotency store): the difference is what the store adds. DynamoDB is moto's HTTP server (the
guard's read, the in-progress put with the resource's move if any, then Powertools' save); Redis is a
real ``redis-server`` (the Lua put, the guard's read and claim, the save). Both over loopback, so the ratio
compares the stores' round trips on this machine, not AWS's network (see the README). A read-only
command without a resource takes no lock (``run_read_only``: the guard's claim, then one put of its
result); each store is timed that way too, in the same rounds.

Run alone: ``python -m tests.bench.idempotency_latency``.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import boto3

from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard
from intentbus.adapters.dynamodb_store import STATE_SK, run_pk
from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
from intentbus.adapters.redis_idempotency import LeasedCachePersistenceLayer, redis_client
from intentbus.envelope import Envelope
from intentbus.execution_claim import ClaimRequest
from intentbus_local.redis_server import redis_server
from tests.command_envelopes import command_envelope
from tests.integration.conftest_moto import create_idempotency_table, create_workflow_table, lambda_context

TENANT, RUN = "bench", "run-bench"
RECORDS_PER_ROUND = 50
ROUNDS = 5


def measure_idempotency(records_per_round: int = RECORDS_PER_ROUND, rounds: int = ROUNDS) -> dict[str, float]:
    """Milliseconds per record, the median of ``rounds`` rounds, the stores interleaved per round.

    Keys: ``guard_only_ms`` (the guard's claim alone, no store), ``dynamodb_added_ms`` and
    ``redis_added_ms`` (what each store adds to it per record), ``redis_to_dynamodb`` (the ratio of the
    two added latencies, same run), ``dynamodb_store_calls`` (round trips per record on DynamoDB, the
    guard's included), ``redis_store_calls`` (on Redis, the guard's included) and of them
    ``redis_store_dynamodb_calls``, ``records``. For a read-only command (no lock):
    ``dynamodb_read_only_added_ms``, ``redis_read_only_added_ms``, their ratios to the locked path's
    (``dynamodb_read_only_to_locked``, ``redis_read_only_to_locked``), and ``dynamodb_read_only_store_calls``,
    ``redis_read_only_store_calls`` (round trips per record, the guard's included, as above).
    """
    os.environ.setdefault("AWS_LAMBDA_FUNCTION_NAME", "intentbus-execute")
    with _moto_dynamodb() as dynamodb, redis_server() as server:
        workflow_table = create_workflow_table(dynamodb)
        dynamodb.put_item(
            TableName=workflow_table,
            Item={"pk": {"S": run_pk(TENANT, RUN)}, "sk": {"S": STATE_SK}, "status": {"S": "RUNNING"}},
        )
        guard = DynamoExecutionGuard(workflow_table, dynamodb)
        on_dynamodb = PowertoolsIdempotentRunner(
            create_idempotency_table(dynamodb), dynamodb, retention_seconds=3600, guard=guard
        )
        redis = redis_client(server.host, server.port, tls=False)
        persistence = LeasedCachePersistenceLayer(redis)
        on_redis = PowertoolsIdempotentRunner.over(persistence, persistence, retention_seconds=3600)
        for runner in (on_dynamodb, on_redis):
            runner.bind(lambda_context(remaining_millis=600_000))

        def guard_only() -> None:
            guard.claim(**_request().arguments())

        modes: dict[str, Callable[[], None]] = {
            "guard": guard_only,
            "dynamodb": lambda: _through(on_dynamodb, guard),
            "redis": lambda: _through(on_redis, guard),
            "dynamodb_read_only": lambda: _through(on_dynamodb, guard, read_only=True),
            "redis_read_only": lambda: _through(on_redis, guard, read_only=True),
        }
        samples: dict[str, list[float]] = {name: [] for name in modes}
        for mode in modes.values():  # warm up: connections, scripts loaded, code paths
            for _ in range(10):
                mode()
        for _ in range(rounds):
            for name, mode in modes.items():
                samples[name].append(_per_record_ms(mode, records_per_round))
        calls = {name: _calls_per_record(mode, dynamodb, redis) for name, mode in modes.items()}
    guard_ms = statistics.median(samples["guard"])
    added = {name: statistics.median(samples[name]) - guard_ms for name in modes if name != "guard"}
    dynamodb_added, redis_added = added["dynamodb"], added["redis"]
    return {
        "guard_only_ms": round(guard_ms, 3),
        "dynamodb_added_ms": round(dynamodb_added, 3),
        "redis_added_ms": round(redis_added, 3),
        "redis_to_dynamodb": _ratio(redis_added, dynamodb_added),
        "dynamodb_store_calls": calls["dynamodb"][0],
        "redis_store_calls": calls["redis"][0] + calls["redis"][1],
        "redis_store_dynamodb_calls": calls["redis"][0],
        "dynamodb_read_only_added_ms": round(added["dynamodb_read_only"], 3),
        "redis_read_only_added_ms": round(added["redis_read_only"], 3),
        "dynamodb_read_only_to_locked": _ratio(added["dynamodb_read_only"], dynamodb_added),
        "redis_read_only_to_locked": _ratio(added["redis_read_only"], redis_added),
        "dynamodb_read_only_store_calls": calls["dynamodb_read_only"][0],
        "redis_read_only_store_calls": calls["redis_read_only"][0] + calls["redis_read_only"][1],
        "records": records_per_round * rounds,
    }


def _ratio(part: float, whole: float) -> float:
    return round(part / whole, 3) if whole > 0 else 0.0


def _through(
    runner: PowertoolsIdempotentRunner, guard: DynamoExecutionGuard, *, read_only: bool = False
) -> None:
    """One command: the runner's in-progress record, the guard's claim (folded or not), the result; or,
    ``read_only``, the guard's claim and the put of the result, no lock."""
    request = _request()

    def work() -> dict[str, Any]:
        if request.take() is None:
            guard.claim(**request.arguments())
        return {"ok": True}

    if read_only:
        runner.run_read_only(_command(), work, claim=request)
    else:
        runner.run(_command(), work, claim=request)


def _calls_per_record(
    mode: Callable[[], None], dynamodb: Any, redis: Any, records: int = 10
) -> tuple[float, float]:
    """(DynamoDB calls, Redis commands) per record."""
    counted = {"dynamodb": 0, "redis": 0}

    def count_dynamodb(**_: Any) -> None:
        counted["dynamodb"] += 1

    execute = redis.execute_command

    def count_redis(*args: Any, **kwargs: Any) -> Any:
        counted["redis"] += 1
        return execute(*args, **kwargs)

    dynamodb.meta.events.register("before-call.dynamodb", count_dynamodb)
    redis.execute_command = count_redis
    try:
        for _ in range(records):
            mode()
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", count_dynamodb)
        redis.execute_command = execute
    return counted["dynamodb"] / records, counted["redis"] / records


def _per_record_ms(mode: Callable[[], None], records: int) -> float:
    started = time.perf_counter()
    for _ in range(records):
        mode()
    return (time.perf_counter() - started) * 1000 / records


def _request() -> ClaimRequest:
    return ClaimRequest(
        tenant_id=TENANT,
        run_id=RUN,
        command_id=f"cmd-{uuid.uuid4().hex}",
        resource=None,
        seen_version=None,
        authorization=None,
        now=datetime.now(UTC),
    )


def _command() -> Envelope:
    return command_envelope(
        uuid.uuid4().hex, type="noop", tenant_id=TENANT, run_id=RUN, source="bench", payload={"n": 1}
    )


@contextmanager
def _moto_dynamodb() -> Iterator[Any]:
    """moto's HTTP server with the local cloud's fixes (its TransactWriteItems no longer copies every
    table it names, which would bill DynamoDB for moto's cost, growing with the table)."""
    from moto.server import ThreadedMotoServer

    from intentbus_local import moto_fixes

    moto_fixes.apply()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        ).client("dynamodb", endpoint_url=f"http://{host}:{port}")
    finally:
        server.stop()


if __name__ == "__main__":
    print(json.dumps(measure_idempotency(), indent=1))
