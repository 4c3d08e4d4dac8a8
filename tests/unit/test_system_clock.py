"""The system clock follows the local cloud's virtual clock as the variable is at each call: absent, set,
changed, emptied and removed again while the process runs."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from intentbus.adapters.clock import CLOCK_OFFSET_ENV, SystemClock, clock_offset


def _shifted_by(clock: SystemClock, seconds: float) -> bool:
    before = datetime.now(UTC)
    now = clock.now()
    after = datetime.now(UTC)
    return before + timedelta(seconds=seconds) <= now <= after + timedelta(seconds=seconds)


def test_the_offset_is_read_as_the_variable_is_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SystemClock()
    monkeypatch.delenv(CLOCK_OFFSET_ENV, raising=False)
    assert clock_offset() == 0.0
    assert _shifted_by(clock, 0)

    monkeypatch.setenv(CLOCK_OFFSET_ENV, "3600")
    assert clock_offset() == 3600.0
    assert _shifted_by(clock, 3600)

    os.environ[CLOCK_OFFSET_ENV] = "7200.5"  # the local cloud advances its clock
    assert clock_offset() == 7200.5
    assert _shifted_by(clock, 7200.5)

    os.environ[CLOCK_OFFSET_ENV] = ""
    assert clock_offset() == 0.0

    del os.environ[CLOCK_OFFSET_ENV]
    assert clock_offset() == 0.0
    assert _shifted_by(clock, 0)


@pytest.mark.parametrize("value", ["0", "31", " 12.25 ", "-5", "1e3", "", "\u0661\u0662"])
def test_the_offset_is_the_one_os_environ_get_reads(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(CLOCK_OFFSET_ENV, value)
    assert clock_offset() == float(os.environ.get(CLOCK_OFFSET_ENV, "0") or 0)


def test_a_malformed_offset_still_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLOCK_OFFSET_ENV, "soon")
    with pytest.raises(ValueError, match="could not convert"):
        clock_offset()


def test_an_environ_without_its_encoded_dict_is_read_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "environ", {CLOCK_OFFSET_ENV: "42"})
    assert clock_offset() == 42.0
    monkeypatch.setattr(os, "environ", {})
    assert clock_offset() == 0.0


def test_the_idempotency_store_moves_its_times_by_the_offset_the_clock_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Execute's DynamoDB idempotency store moves a saved result's expiry by the same offset the clock
    reads, however the variable was set, changed or removed."""
    from intentbus.adapters.idempotency import LapseWatchingClient

    sent: list[dict[str, Any]] = []

    class Client:
        def update_item(self, **kwargs: Any) -> dict[str, Any]:
            sent.append(kwargs)
            return {}

    store = LapseWatchingClient(Client())  # type: ignore[arg-type]
    monkeypatch.delenv(CLOCK_OFFSET_ENV, raising=False)
    for value, expected in (("", 0.0), ("90", 90.0), ("-12.5", -12.5), (None, 0.0)):
        if value is None:
            del os.environ[CLOCK_OFFSET_ENV]
        else:
            os.environ[CLOCK_OFFSET_ENV] = value
        store.update_item(TableName="t", ExpressionAttributeValues={":expiry": {"N": "1000"}})
        assert sent[-1]["ExpressionAttributeValues"][":expiry"]["N"] == str(int(1000 + expected))
        assert expected == clock_offset() == float(os.environ.get(CLOCK_OFFSET_ENV, "0") or 0)
