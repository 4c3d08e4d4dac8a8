"""On DynamoDB a command's stored result is its packed bytes, a binary attribute (no base85 text): written
by both paths (the locked save and a read-only command's one put), read back by both, and by the reconcile
path's put; a record stored as text before reads back as it did; a stored result altered or cut short is
never taken for the command's result, and the command is not run again."""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus.adapters.compression import compressed
from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard
from intentbus.adapters.idempotency import (
    PACKED,
    PowertoolsIdempotentRunner,
    StoredResultUnreadable,
    _packed,
)
from intentbus.envelope import Envelope
from tests.command_envelopes import command_envelope
from tests.integration.conftest_moto import (  # noqa: F401
    IDEMPOTENCY_TABLE,
    Crash,
    aws,
    client,
    crash,
    create_workflow_table,
    execute_runner,
)

RESULT = {"ran": "first", "note": "café ✓", "ids": [f"id-{n:04d}" for n in range(40)]}
LEASE = 30


@pytest.fixture
def runner(aws: None, monkeypatch: pytest.MonkeyPatch) -> PowertoolsIdempotentRunner:  # noqa: F811
    dynamodb = client("dynamodb")
    guard = DynamoExecutionGuard(create_workflow_table(dynamodb), dynamodb)
    return execute_runner(monkeypatch, dynamodb, guard=guard, lease_seconds=LEASE)


def command(key: str = "k1") -> Envelope:
    return command_envelope(key, id=f"cmd-{key}", type="diagnose", payload={"service": "svc"})


def the_record() -> dict[str, Any]:
    items: list[dict[str, Any]] = client("dynamodb").scan(TableName=IDEMPOTENCY_TABLE)["Items"]
    (item,) = items
    return item


def with_data(data: dict[str, Any]) -> None:
    """The record as it would be with ``data`` stored for its result (what an older version stored, or
    what an attacker with write access to the table left)."""
    client("dynamodb").put_item(TableName=IDEMPOTENCY_TABLE, Item={**the_record(), "data": data})


def counting(calls: list[str], answer: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    def work() -> dict[str, Any]:
        calls.append("ran")
        return answer

    return work


RUNS = ["locked", "read_only"]


def run(runner: PowertoolsIdempotentRunner, path: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    if path == "locked":
        return runner.run(command(), work)
    return runner.run_read_only(command(), work)


def packed_bytes(result: dict[str, Any]) -> bytes:
    return compressed(json.dumps(result, separators=(",", ":"), ensure_ascii=True).encode())


@pytest.mark.parametrize("path", RUNS)
def test_a_result_is_stored_as_the_bytes_base85_text_stood_for(
    runner: PowertoolsIdempotentRunner, path: str
) -> None:
    run(runner, path, lambda: RESULT)

    stored = the_record()["data"]
    assert set(stored) == {"B"}
    assert stored["B"] == packed_bytes(RESULT)
    # The same bytes the text of the versions before decoded to, a quarter fewer stored.
    text = _packed(RESULT)[PACKED]
    assert base64.b85decode(text) == stored["B"]
    assert len(stored["B"]) * 5 <= len(text) * 4


@pytest.mark.parametrize("first", RUNS)
@pytest.mark.parametrize("again", RUNS)
def test_either_path_reads_the_others_bytes(
    runner: PowertoolsIdempotentRunner, first: str, again: str
) -> None:
    calls: list[str] = []
    assert run(runner, first, counting(calls, RESULT)) == RESULT
    assert run(runner, again, counting(calls, {"ran": "again"})) == RESULT
    assert calls == (["ran"] if again == "locked" else ["ran", "ran"])  # a read-only tool ran, then dropped


@pytest.mark.parametrize("path", RUNS)
def test_a_result_stored_as_text_before_reads_back(runner: PowertoolsIdempotentRunner, path: str) -> None:
    runner.run(command(), lambda: {"ran": "placeholder"})
    with_data({"S": json.dumps({PACKED: base64.b85encode(packed_bytes(RESULT)).decode()})})

    calls: list[str] = []
    assert run(runner, path, counting(calls, {"ran": "again"})) == RESULT
    assert calls == ([] if path == "locked" else ["ran"])


def test_a_result_stored_plain_before_results_were_packed_reads_back(
    runner: PowertoolsIdempotentRunner,
) -> None:
    runner.run(command(), lambda: {"ran": "placeholder"})
    with_data({"S": json.dumps(RESULT, sort_keys=True)})

    assert runner.run(command(), lambda: {"ran": "again"}) == RESULT


def test_the_reconcile_path_stores_its_answer_as_bytes(
    runner: PowertoolsIdempotentRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Crash):
        runner.run(command(), crash)
    monkeypatch.setenv(CLOCK_OFFSET_ENV, str(LEASE + 1))

    reconciled = runner.run(command(), lambda: {"ran": True}, lambda: RESULT)

    assert reconciled == RESULT
    assert the_record()["data"] == {"B": packed_bytes(RESULT)}
    assert runner.run(command(), lambda: {"ran": "again"}) == RESULT


def _tampered() -> list[tuple[str, dict[str, Any]]]:
    whole = packed_bytes(RESULT)
    flipped = bytearray(whole)
    flipped[len(whole) // 2] ^= 0x01
    text = base64.b85encode(whole).decode()
    return [
        ("bytes cut short", {"B": whole[:-6]}),
        ("bytes added after the end", {"B": whole + b"{}"}),
        ("a byte changed", {"B": bytes(flipped)}),
        ("not zlib", {"B": b"\x00" * 40}),
        ("a list, not a result", {"B": compressed(b"[1,2,3]")}),
        ("text cut short", {"S": json.dumps({PACKED: text[:-10]})}),
        ("text not base85", {"S": json.dumps({PACKED: '"' + text[1:]})}),
        ("text not JSON", {"S": '{"' + PACKED + '": "' + text}),
    ]


@pytest.mark.parametrize("path", RUNS)
@pytest.mark.parametrize(("how", "data"), _tampered(), ids=[how for how, _ in _tampered()])
def test_a_tampered_result_is_never_taken_and_the_command_not_run_again(
    runner: PowertoolsIdempotentRunner, path: str, how: str, data: dict[str, Any]
) -> None:
    """Attack: the stored result is altered or truncated. Reading it back fails the delivery (SQS retries
    it, then dead-letters it): no made-up result is published, and the locked path runs nothing again."""
    runner.run(command(), lambda: RESULT)
    with_data(data)
    before = the_record()

    # Text that is no JSON at all fails Powertools' own reading, before the result is unpacked.
    expected = json.JSONDecodeError if how == "text not JSON" else StoredResultUnreadable
    calls: list[str] = []
    with pytest.raises(expected):
        run(runner, path, counting(calls, {"ran": "again"}))

    assert the_record() == before
    assert calls == ([] if path == "locked" else ["ran"])  # a read-only tool read; nothing was stored


def test_a_completed_record_without_a_result_is_unreadable(runner: PowertoolsIdempotentRunner) -> None:
    runner.run(command(), lambda: RESULT)
    item = the_record()
    del item["data"]
    client("dynamodb").put_item(TableName=IDEMPOTENCY_TABLE, Item=item)

    with pytest.raises(StoredResultUnreadable):
        runner.run(command(), lambda: {"ran": "again"})


def test_zlib_checks_what_it_unpacks() -> None:
    """What the tamper checks rest on: a changed or missing byte fails zlib's checksum or its stream."""
    whole = packed_bytes(RESULT)
    for cut in range(1, len(whole)):
        with pytest.raises(zlib.error):
            zlib.decompress(whole[:cut])
