"""Execute's idempotency on both stores, DynamoDB (moto) and Redis (a real ``redis-server``): the same
semantics — a result kept for the retention period, one payload per key, an in-progress lease that
blocks a second attempt until it lapses, and a lapse that is noticed, never run blindly again."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
)

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
from intentbus.adapters.redis_idempotency import LeasedCachePersistenceLayer, redis_client
from intentbus.envelope import Envelope
from intentbus.ports import KeyHeldByAnotherCommand
from intentbus_local.redis_server import RedisServer, redis_server
from tests.command_envelopes import command_envelope
from tests.integration.conftest_moto import (  # noqa: F401
    Crash,
    aws,
    client,
    crash,
    create_idempotency_table,
    lambda_context,
)

RETENTION = 3600
LEASE = 30
STORES = ["dynamodb", "redis"]


@dataclass
class Store:
    name: str
    runner: PowertoolsIdempotentRunner
    server: RedisServer | None = None


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture(params=STORES)
def store(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    aws: None,  # noqa: F811
) -> Store:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "intentbus-execute")
    monkeypatch.delenv(CLOCK_OFFSET_ENV, raising=False)
    if request.param == "dynamodb":
        dynamodb = client("dynamodb")
        runner = PowertoolsIdempotentRunner(
            create_idempotency_table(dynamodb), dynamodb, retention_seconds=RETENTION, lease_seconds=LEASE
        )
        found = Store("dynamodb", runner)
    else:
        server: RedisServer = request.getfixturevalue("redis")
        connection = redis_client(server.host, server.port, tls=False)
        connection.flushall()
        persistence = LeasedCachePersistenceLayer(connection)
        runner = PowertoolsIdempotentRunner.over(
            persistence, persistence, retention_seconds=RETENTION, lease_seconds=LEASE
        )
        found = Store("redis", runner, server)
    found.runner.bind(lambda_context(remaining_millis=600_000))
    return found


def command(key: str, payload: dict[str, object] | None = None) -> Envelope:
    return command_envelope(key, payload=payload)


def counting(calls: list[str], answer: str) -> Callable[[], dict[str, object]]:
    def work() -> dict[str, object]:
        calls.append(answer)
        return {"ran": answer}

    return work


def test_a_result_is_kept_and_returned_to_every_repeat(store: Store) -> None:
    calls: list[str] = []
    first = store.runner.run(command("k1"), counting(calls, "first"))
    again = store.runner.run(command("k1"), counting(calls, "again"))
    assert (first, again, calls) == ({"ran": "first"}, {"ran": "first"}, ["first"])


def test_a_key_holds_one_payload(store: Store) -> None:
    calls: list[str] = []
    store.runner.run(command("k2"), counting(calls, "first"))
    with pytest.raises(KeyHeldByAnotherCommand):
        store.runner.run(command("k2", {"invoice": "inv-FORGED"}), counting(calls, "forged"))
    assert calls == ["first"]


def test_a_failed_attempt_leaves_no_result_and_runs_again(store: Store) -> None:
    def failing() -> dict[str, object]:
        raise ConnectionError("the target timed out")

    with pytest.raises(ConnectionError):
        store.runner.run(command("k3"), failing)
    assert store.runner.run(command("k3"), lambda: {"ran": "retry"}) == {"ran": "retry"}


def test_a_lapsed_lease_goes_to_the_reconcile_path_not_the_tool(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: the lease lapses mid-effect (the attempt died holding it). Until it lapses a second
    attempt is refused; after, the second attempt is told, and reconciles instead of running blindly."""
    with pytest.raises(Crash):
        store.runner.run(command("k4"), crash)
    monkeypatch.setenv(CLOCK_OFFSET_ENV, str(LEASE - 1))
    with pytest.raises(IdempotencyAlreadyInProgressError):
        store.runner.run(command("k4"), lambda: {"ran": True})

    monkeypatch.setenv(CLOCK_OFFSET_ENV, str(LEASE + 1))
    reconciled = store.runner.run(command("k4"), lambda: {"ran": True}, lambda: {"reconciled": True})

    assert reconciled == {"reconciled": True}
    assert store.runner.run(command("k4"), lambda: {"ran": "again"}) == {"reconciled": True}


def test_a_first_attempt_is_never_taken_for_a_lapsed_one(store: Store) -> None:
    result = store.runner.run(command("k5"), lambda: {"ran": True}, lambda: {"reconciled": True})
    assert result == {"ran": True}


def test_a_result_outlives_leases_and_expires_with_the_retention(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    store.runner.run(command("k6"), counting(calls, "first"))
    monkeypatch.setenv(CLOCK_OFFSET_ENV, str(RETENTION - 60))
    assert store.runner.run(command("k6"), counting(calls, "kept")) == {"ran": "first"}
    monkeypatch.setenv(CLOCK_OFFSET_ENV, str(RETENTION + 60))
    assert store.runner.run(command("k6"), counting(calls, "expired")) == {"ran": "expired"}
    assert calls == ["first", "expired"]


def test_a_second_execute_racing_on_the_key_is_refused_while_the_first_runs(store: Store) -> None:
    """Attack: a duplicate delivery reaches a second execute while the first is inside the tool."""
    inside, finish = threading.Event(), threading.Event()
    calls: list[str] = []
    results: list[object] = []

    def slow() -> dict[str, object]:
        calls.append("first")
        inside.set()
        assert finish.wait(10), "the racing attempt never finished"
        return {"ran": "first"}

    first = threading.Thread(target=lambda: results.append(store.runner.run(command("k7"), slow)))
    first.start()
    assert inside.wait(10)
    with pytest.raises(IdempotencyAlreadyInProgressError):
        store.runner.run(command("k7"), counting(calls, "racer"))
    finish.set()
    first.join(10)

    assert calls == ["first"]
    assert results == [{"ran": "first"}]
    assert store.runner.run(command("k7"), counting(calls, "after")) == {"ran": "first"}


def test_a_redis_restart_loses_results_and_the_command_runs_again(store: Store) -> None:
    """Attack: Redis restarts without persistence. Every result and lease is gone, so a redelivered
    command runs its tool again: Redis without durable replicas is for tools safe to repeat (the
    README's choice). DynamoDB keeps it."""
    calls: list[str] = []
    store.runner.run(command("k8"), counting(calls, "first"))
    if store.server is not None:
        store.server.restart()
    again = store.runner.run(command("k8"), counting(calls, "again"))
    expected = ["first", "again"] if store.name == "redis" else ["first"]
    assert calls == expected
    assert again == {"ran": expected[-1]}


def test_an_unreachable_redis_runs_nothing_and_fails_the_record_for_a_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Redis down: the in-progress put cannot be made, so the tool never runs; the error fails the
    record and SQS delivers it again (then to its DLQ): nothing is lost."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "intentbus-execute")
    with redis_server() as server:
        host, port = server.host, server.port
    persistence = LeasedCachePersistenceLayer(redis_client(host, port, tls=False, timeout_seconds=0.5))
    runner = PowertoolsIdempotentRunner.over(persistence, persistence, retention_seconds=RETENTION)
    runner.bind(lambda_context())
    calls: list[str] = []

    with pytest.raises(IdempotencyPersistenceLayerError):
        runner.run(command("k9"), counting(calls, "ran"))
    assert calls == []
