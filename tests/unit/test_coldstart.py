"""What a function builds once is built without the garbage collector's passes; the collector comes back."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from intentbus import coldstart


@pytest.fixture(autouse=True)
def _collector_as_found() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()


def test_a_build_runs_without_the_collector_and_gives_it_back() -> None:
    gc.enable()
    frozen = gc.get_freeze_count()

    with coldstart.building():
        inside = gc.isenabled()

    assert not inside
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen, "nothing frozen: tests and the local cloud build over and over"


def test_a_nested_build_leaves_the_collector_to_the_outer_one() -> None:
    gc.enable()

    with coldstart.building():
        with coldstart.building():
            pass
        assert not gc.isenabled(), "the outer build still runs without the collector"

    assert gc.isenabled()


def test_a_build_that_fails_gives_the_collector_back() -> None:
    gc.enable()

    with pytest.raises(RuntimeError), coldstart.building():
        raise RuntimeError("the build failed")

    assert gc.isenabled()


def test_a_build_leaves_a_paused_collector_paused() -> None:
    gc.disable()

    with coldstart.building():
        pass

    assert not gc.isenabled()


def test_a_handlers_first_call_runs_without_the_collector_and_later_ones_with_it() -> None:
    gc.enable()
    seen: list[bool] = []

    def handler(event: str) -> str:
        seen.append(gc.isenabled())
        return event

    entry = coldstart.first_call_building(handler)

    assert entry("first") == "first"
    assert entry("second") == "second"

    assert seen == [False, True]
    assert gc.isenabled()


def test_a_first_call_that_fails_gives_the_collector_back() -> None:
    gc.enable()

    def failing(event: str) -> str:
        raise ValueError(event)

    entry = coldstart.first_call_building(failing)

    with pytest.raises(ValueError, match="first"):
        entry("first")
    assert gc.isenabled()


def test_what_a_first_call_built_is_frozen_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coldstart, "_first_call_frozen", False)
    kept: list[list[int]] = []
    gc.enable()
    frozen = gc.get_freeze_count()

    def handler(event: int) -> int:
        kept.extend([index] for index in range(event))
        return event

    coldstart.first_call_building(handler)(1000)
    after_first = gc.get_freeze_count()
    coldstart.first_call_building(handler)(1000)

    assert after_first >= frozen + 1000
    assert gc.get_freeze_count() == after_first, "a second handler's first call freezes nothing more"
    gc.unfreeze()
