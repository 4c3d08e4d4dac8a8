"""The stage bench counts a tool's client as the tool's: the CPU of making it, not only of its calls."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.bench.stage_probe import _Fake, _ToolClients


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Factory:
    """Makes a client in 0.25 s of the fake clock; an operation on it takes 0.5 s."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.made: list[str] = []

    def client(self, service_name: str) -> Any:
        self.clock.now += 0.25
        self.made.append(service_name)
        return self

    def describe(self) -> str:
        self.clock.now += 0.5
        return "answer"


def test_making_a_tools_client_is_counted_apart_from_the_stages_work(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(time, "process_time", clock)
    fake = _Fake([])
    factory = _Factory(clock)

    client = _ToolClients(factory, fake).client("cloudwatch")

    assert factory.made == ["cloudwatch"]
    assert fake.tool_client_seconds == 0.25
    assert client.describe() == "answer"
    assert fake.in_tool == 0
    assert fake.tool_client_seconds == 0.25, "a call is counted where botocore's calls are, not here"


def test_a_client_the_factory_fails_to_make_still_counts_its_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(time, "process_time", clock)

    class _Failing(_Factory):
        def client(self, service_name: str) -> Any:
            self.clock.now += 0.125
            raise RuntimeError("no such service")

    fake = _Fake([])
    with pytest.raises(RuntimeError, match="no such service"):
        _ToolClients(_Failing(clock), fake).client("nope")
    assert fake.tool_client_seconds == 0.125
