"""A read-only command without the in-progress lock with its records in Redis (a real ``redis-server``):
one script stores the completed record unless the key is held, with the outcomes DynamoDB's conditional
put has. The first result stored is the one every delivery publishes; forgeries are refused before the
tool runs; a record another attempt holds in progress, live or lapsed, is never overwritten."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis as redis_py
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
from intentbus.adapters.redis_idempotency import LeasedCachePersistenceLayer, redis_client
from intentbus.envelope import Envelope
from intentbus.errors import NotRecorded
from intentbus.journal import Outcome
from intentbus.ports import KeyHeldByAnotherCommand
from intentbus_local.redis_server import RedisServer, redis_server
from tests.command_envelopes import command_envelope
from tests.integration.conftest_moto import (  # noqa: F401
    Crash,
    Resources,
    aws,
    crash,
    lambda_context,
    resources,
)
from tests.integration.test_read_only_commands import (
    FORGERIES,
    check_a_forgery_is_refused_before_its_tool_runs,
    check_racing_deliveries_publish_the_first_stored_result,
    diagnostics_command,
)

RETENTION = 3600
LEASE = 30


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with redis_server() as running:
        yield running


@pytest.fixture
def connection(server: RedisServer) -> redis_py.Redis:
    found = redis_client(server.host, server.port, tls=False)
    found.flushall()
    return found


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every command a client sends Redis, one round trip each (a pipeline is none here)."""
    names: list[str] = []
    execute: Callable[..., Any] = redis_py.Redis.execute_command

    def counted(self: redis_py.Redis, *args: Any, **options: Any) -> Any:
        names.append(str(args[0]))
        return execute(self, *args, **options)

    monkeypatch.setattr(redis_py.Redis, "execute_command", counted)
    return names


@pytest.fixture
def runner(connection: redis_py.Redis, monkeypatch: pytest.MonkeyPatch) -> PowertoolsIdempotentRunner:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "intentbus-execute")
    monkeypatch.delenv(CLOCK_OFFSET_ENV, raising=False)
    persistence = LeasedCachePersistenceLayer(connection)
    runner = PowertoolsIdempotentRunner.over(
        persistence, persistence, retention_seconds=RETENTION, lease_seconds=LEASE
    )
    runner.bind(lambda_context(remaining_millis=600_000))
    return runner


def command(payload: dict[str, Any] | None = None, key: str = "k1") -> Envelope:
    return command_envelope(key, id=f"cmd-{key}", type="diagnose", payload=payload or {"service": "svc"})


def records(connection: redis_py.Redis) -> dict[str, dict[str, Any]]:
    return {str(key): json.loads(str(connection.get(key))) for key in connection.keys("*")}


def test_one_round_trip_fewer_than_the_locked_path_and_either_path_reads_the_other(
    runner: PowertoolsIdempotentRunner, connection: redis_py.Redis, sent: list[str]
) -> None:
    runner.run(command(key="warm-1"), lambda: {"read": 0})  # each script loaded once per server
    runner.run_read_only(command(key="warm-2"), lambda: {"read": 0})
    connection.flushall()
    sent.clear()

    assert runner.run_read_only(command(), lambda: {"read": 1}) == {"read": 1}
    unlocked = list(sent)
    ((key, record),) = records(connection).items()
    sent.clear()
    assert runner.run(command(key="locked"), lambda: {"read": "locked"}) == {"read": "locked"}

    assert (unlocked, sent) == (["EVALSHA"], ["EVALSHA", "SET"])
    assert record["status"] == "COMPLETED"
    assert "in_progress_expiration" not in record
    assert record["validation"], "the payload's hash is kept"
    assert RETENTION - 5 <= int(str(connection.ttl(key))) <= RETENTION
    # The locked path finds the record and answers from it, without running its work; and the other way.
    assert runner.run(command(), lambda: {"read": "locked"}) == {"read": 1}
    assert runner.run_read_only(command(key="locked"), lambda: {"read": "unlocked"}) == {"read": "locked"}


def test_two_racing_deliveries_both_answer_with_the_first_stored_result(
    runner: PowertoolsIdempotentRunner, connection: redis_py.Redis
) -> None:
    answers: list[dict[str, Any]] = []

    def first() -> dict[str, Any]:
        # The second delivery runs and stores its result while the first one's tool is still reading.
        answers.append(runner.run_read_only(command(), lambda: {"read": "second"}))
        return {"read": "first"}

    answers.append(runner.run_read_only(command(), first))

    assert answers == [{"read": "second"}, {"read": "second"}]
    assert len(records(connection)) == 1


def test_another_payload_under_the_key_is_refused_and_stores_nothing(
    runner: PowertoolsIdempotentRunner, connection: redis_py.Redis
) -> None:
    runner.run_read_only(command(), lambda: {"read": 1})
    before = records(connection)

    with pytest.raises(KeyHeldByAnotherCommand):
        runner.run_read_only(command({"service": "other"}), lambda: {"read": "forged"})

    assert records(connection) == before
    assert runner.run_read_only(command(), lambda: {"read": 2}) == {"read": 1}


def test_a_refused_claim_writes_nothing(
    runner: PowertoolsIdempotentRunner, connection: redis_py.Redis
) -> None:
    def refused() -> dict[str, Any]:
        raise NotRecorded("no such authorization", field="detail")

    with pytest.raises(NotRecorded):
        runner.run_read_only(command(), refused)

    assert records(connection) == {}
    assert runner.run_read_only(command(), lambda: {"read": 1}) == {"read": 1}


def test_a_record_in_progress_is_left_to_its_attempt(runner: PowertoolsIdempotentRunner) -> None:
    """An attempt on the locked path (a deployment before this one) holds the key while this one reads."""
    raised: list[BaseException] = []

    def locked() -> dict[str, Any]:
        try:
            runner.run_read_only(command(), lambda: {"read": "unlocked"})
        except IdempotencyAlreadyInProgressError as error:
            raised.append(error)
        return {"read": "locked"}

    assert runner.run(command(), locked) == {"read": "locked"}

    assert len(raised) == 1, "the record in progress was overwritten"
    assert runner.run_read_only(command(), lambda: {"read": "again"}) == {"read": "locked"}


def test_a_lapsed_record_in_progress_is_checked_as_the_locked_path_checks_it(
    runner: PowertoolsIdempotentRunner, connection: redis_py.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Crash):
        runner.run(command(), crash)
    monkeypatch.setenv(CLOCK_OFFSET_ENV, str(LEASE + 1))  # the lease has lapsed on the virtual clock

    result = runner.run_read_only(command(), lambda: {"read": 1}, after_lapse=lambda: {"checked": True})

    assert result == {"checked": True}
    (record,) = records(connection).values()
    assert record["status"] == "COMPLETED"


def test_a_record_in_progress_past_its_whole_expiry_is_still_checked_not_overwritten(
    runner: PowertoolsIdempotentRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: an attempt died in its tool and nothing came back until after the retention (on the
    virtual clock; Redis keeps it for the retention in real time). Its effect is still unknown."""

    with pytest.raises(Crash):
        runner.run(command(), crash)
    monkeypatch.setenv(CLOCK_OFFSET_ENV, str(RETENTION + 60))

    result = runner.run_read_only(command(), lambda: {"read": 1}, after_lapse=lambda: {"checked": True})

    assert result == {"checked": True}


def test_an_expired_result_is_replaced_on_the_virtual_clock(
    runner: PowertoolsIdempotentRunner, connection: redis_py.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner.run_read_only(command(), lambda: {"read": "first"})
    monkeypatch.setenv(CLOCK_OFFSET_ENV, str(RETENTION - 60))
    assert runner.run_read_only(command(), lambda: {"read": "kept"}) == {"read": "first"}

    monkeypatch.setenv(CLOCK_OFFSET_ENV, str(RETENTION + 60))
    assert runner.run_read_only(command(), lambda: {"read": "expired"}) == {"read": "expired"}
    (record,) = records(connection).values()
    assert record["expiration"] > RETENTION * 2  # the record's expiry on the virtual clock


# ------------------------------------------------------------------ through the execute stage


@pytest.fixture
def on_redis(connection: redis_py.Redis, server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDEMPOTENCY_REDIS_ENDPOINT", server.host)
    monkeypatch.setenv("IDEMPOTENCY_REDIS_PORT", str(server.port))
    monkeypatch.setenv("IDEMPOTENCY_REDIS_TLS", "false")


@FORGERIES
def test_a_forged_read_only_command_is_refused_before_its_tool_runs(
    on_redis: None,
    connection: redis_py.Redis,
    resources: Resources,  # noqa: F811
    change: dict[str, Any],
) -> None:
    check_a_forgery_is_refused_before_its_tool_runs(resources, change, lambda: records(connection))


def test_through_the_stage_a_read_only_command_sends_one_script_and_takes_no_lock(
    on_redis: None,
    connection: redis_py.Redis,
    runner: PowertoolsIdempotentRunner,
    resources: Resources,  # noqa: F811
    sent: list[str],
) -> None:
    runner.run_read_only(command(key="warm"), lambda: {"read": 0})  # the script loaded on the server
    connection.flushall()
    pipeline, body = diagnostics_command(resources)
    sent.clear()

    hop = pipeline.deliver("execute", body)

    assert hop.outcome == Outcome.APPLIED.value
    assert sent == ["EVALSHA"]
    assert len(hop.of("monitoring")) > 0
    assert [r["status"] for r in records(connection).values()] == ["COMPLETED"]
    again = pipeline.deliver("execute", body)
    assert again.outcome == Outcome.DUPLICATE.value
    assert [e.id for e in again.published] == [e.id for e in hop.published]


def test_through_the_stage_racing_deliveries_publish_the_first_stored_result(
    on_redis: None,
    resources: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check_racing_deliveries_publish_the_first_stored_result(
        resources, monkeypatch, LeasedCachePersistenceLayer
    )
