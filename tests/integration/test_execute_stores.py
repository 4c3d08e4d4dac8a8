"""The incident workflow through the five real stage cores on moto, with execute's idempotency records in
DynamoDB and in Redis (a real ``redis-server``, selected by ``IDEMPOTENCY_REDIS_ENDPOINT`` as the
template sets it): the same outcome, a redelivered command answered from its record, never run twice."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from intentbus.adapters.redis_idempotency import redis_client
from intentbus.state import Status
from intentbus_local.redis_server import RedisServer, redis_server
from tests.integration.conftest_moto import (  # noqa: F401  (fixtures)
    IDEMPOTENCY_TABLE,
    Resources,
    aws,
    client,
    resources,
)
from tests.integration.test_seed_tools import TENANT, _incident_body, _run_id, _world, desired_count


@pytest.fixture(scope="module")
def redis_once() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture
def redis(redis_once: RedisServer) -> RedisServer:
    """Empty for each test: the seed incident's run ids, hence its keys, repeat from test to test."""
    redis_client(redis_once.host, redis_once.port, tls=False).flushall()
    return redis_once


@pytest.mark.parametrize("store", ["dynamodb", "redis"])
def test_the_incident_completes_and_a_redelivered_command_is_not_run_again(
    store: str,
    resources: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if store == "redis":
        server: RedisServer = request.getfixturevalue("redis")
        monkeypatch.setenv("IDEMPOTENCY_REDIS_ENDPOINT", server.host)
        monkeypatch.setenv("IDEMPOTENCY_REDIS_PORT", str(server.port))
        monkeypatch.setenv("IDEMPOTENCY_REDIS_TLS", "false")
    world = _world(resources)

    hops = world.pipeline.run(_incident_body("dev"))

    state = world.pipeline.runtime.store.state(TENANT, _run_id(hops))
    assert state is not None
    assert state.status is Status.COMPLETED
    assert desired_count(world.ecs) == 4
    executes = [hop for hop in hops if hop.stage == "execute"]
    in_table = [c for hop in executes for c in hop.calls if IDEMPOTENCY_TABLE in str(c.request)]
    workflow_writes = [hop.of("dynamodb") for hop in executes]
    if store == "redis":
        assert in_table == [], "execute used the DynamoDB idempotency table"
        assert all(len(calls) <= 2 for calls in workflow_writes)  # the guard's read and its resource move
    else:
        assert all(len(calls) <= 3 for calls in workflow_writes)  # the guard's read, the claim, the save

    scaled = executes[-1]
    world.ecs.update_service(cluster="shop", service="checkout-api", desiredCount=7)  # moved on since
    again = world.pipeline.deliver("execute", scaled.body)

    assert again.outcome == "duplicate"
    assert [e.id for e in again.published] == [e.id for e in scaled.published]
    assert again.of("ecs") == [], "the redelivered command ran its tool again"
    assert desired_count(world.ecs) == 7


def test_after_a_redis_restart_a_redelivered_command_runs_again_unless_its_run_ended(
    redis: RedisServer,
    resources: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attack: Redis restarts without persistence, then CommandAuthorized facts are delivered again.
    Their results are gone. While the run is open the guard lets the same command claim again, so the
    tool runs again (collect_diagnostics, a read: harmless; a tool unsafe to repeat belongs on DynamoDB);
    its fact keeps its id, so nothing downstream takes it twice. Once the run ended the guard refuses:
    the command is skipped, not run, and record takes the fact as a duplicate."""
    monkeypatch.setenv("IDEMPOTENCY_REDIS_ENDPOINT", redis.host)
    monkeypatch.setenv("IDEMPOTENCY_REDIS_PORT", str(redis.port))
    monkeypatch.setenv("IDEMPOTENCY_REDIS_TLS", "false")
    world = _world(resources)
    pipeline = world.pipeline
    body = _incident_body("dev")
    for stage in ("validate", "decide", "authorize"):
        body = pipeline.deliver(stage, body).delivered_bodies[0]
    diagnosed = pipeline.deliver("execute", body)

    redis.restart()
    again = pipeline.deliver("execute", body)

    assert again.outcome == "applied"
    assert len(again.of("monitoring")) == len(diagnosed.of("monitoring")) > 0, "the read ran again"
    assert [e.id for e in again.published] == [e.id for e in diagnosed.published]

    hops = pipeline.run(_incident_body("dev"))
    scaled = [hop for hop in hops if hop.stage == "execute"][-1]
    state = pipeline.runtime.store.state(TENANT, _run_id(hops))
    redis.restart()
    late = pipeline.deliver("execute", scaled.body)
    recorded = pipeline.deliver("record", late.delivered_bodies[0])

    assert late.of("ecs") == [], "the scale ran again after its run ended"
    assert [e.type for e in late.published] == ["CommandSkipped"]
    assert [e.id for e in late.published] == [e.id for e in scaled.published]
    assert recorded.outcome == "duplicate"
    assert pipeline.runtime.store.state(TENANT, _run_id(hops)) == state
