"""Long work shows progress: a bar on a terminal, a plain line every few seconds otherwise."""

from __future__ import annotations

import io
from typing import Any

import pytest

from intentbus_cli.progress import Progress, watch_pipeline


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_piped_output_gets_a_plain_line_per_interval_with_the_eta_and_a_last_line() -> None:
    out, clock = io.StringIO(), Clock()
    bar = Progress("local run", total=400, unit="inputs done", stream=out, interval=5, clock=clock)
    with bar as progress:
        for second in range(1, 21):
            clock.now = second
            progress.update(done=20 * second, detail={"validate": 30, "authorize": 0, "execute": 10})
    lines = out.getvalue().splitlines()
    in_flight = "in flight: validate 30, execute 10"
    assert lines[0] == f"local run: 100/400 inputs done (25%); {in_flight}; 5 s, ETA 15 s"
    assert len(lines) == 5  # at 5, 10, 15, 20 s and the last one
    assert lines[-1] == f"local run: 400/400 inputs done (100%); {in_flight}; 20 s"


def test_a_terminal_gets_a_bar_with_the_counts_and_the_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    out = Terminal()
    with Progress("faults", total=50, unit="schedules", stream=out) as progress:
        progress.update(done=12, detail="in flight: execute 3")
        progress.say("VIOLATION schedule 7")
    shown = out.getvalue()
    assert "faults" in shown
    assert "12/50" in shown
    assert "in flight: execute 3" in shown
    assert "VIOLATION schedule 7" in shown


class FakeCloud:
    def __init__(self) -> None:
        self.depths = {"validate": 40, "execute": 10}
        self.observers: list[Any] = []

    def stage_depths(self) -> dict[str, int]:
        return dict(self.depths)

    def add_observer(self, observer: Any) -> Any:
        self.observers.append(observer)
        return lambda: self.observers.remove(observer)


def test_the_pipeline_watch_counts_inputs_out_of_every_stage_queue_and_never_goes_back() -> None:
    cloud, clock = FakeCloud(), Clock()
    with Progress("local run", total=100, stream=io.StringIO(), clock=clock) as progress:
        stop = watch_pipeline(cloud, progress, inputs=100, clock=clock)
        assert (progress.done, progress.detail) == (50, "in flight: validate 40, execute 10")
        cloud.depths = {"validate": 0, "execute": 150}  # a fan-out: more messages than inputs
        clock.now = 1
        cloud.observers[0](None)
        assert progress.done == 50
        cloud.depths = {"validate": 0, "execute": 0}
        clock.now = 2
        cloud.observers[0](None)
        assert progress.done == 100
        stop()
    assert cloud.observers == []


def test_while_inputs_are_still_being_sent_only_those_sent_can_be_done() -> None:
    cloud, clock = FakeCloud(), Clock()
    cloud.depths = {"validate": 60, "execute": 0}
    sent = [100]
    with Progress("load run", total=1000, stream=io.StringIO(), clock=clock) as progress:
        watch_pipeline(cloud, progress, inputs=1000, sent=lambda: sent[0], clock=clock)
        assert (progress.done, progress.detail) == (40, "sent 100; in flight: validate 60")
