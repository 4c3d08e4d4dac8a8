"""The parallel runner loses no schedule silently: a worker that dies has its seeds reported."""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import cast

from intentbus_faults import run as runner
from intentbus_faults.harness import FaultHarness
from intentbus_faults.run import Tally, chunked, run, run_parallel

DIES_AT = 7


def _no_harness() -> None:
    """These workers run no schedules, so they need no local cloud."""


def _tally_or_die(seeds: list[int], kinds: list[str]) -> list[Tally]:
    if DIES_AT in seeds:
        os._exit(137)  # as the kernel's OOM killer would end it: no exception, no response
    return [Tally(seed, "stand-in", {}, [], [], [], {}, 1, 0.0) for seed in seeds]


def test_seeds_of_a_worker_that_died_are_unfinished_and_every_seed_is_accounted_for() -> None:
    outcome = run_parallel(
        18,
        0,
        workers=2,
        chunk=1,
        schedules_per_process=3,  # generations of 6 seeds: the second of three has the dying chunk
        start_worker=_no_harness,
        run_chunk=_tally_or_die,
    )

    tallied = [tally.seed for tally in outcome.tallies]
    assert DIES_AT in outcome.unfinished
    assert sorted(tallied + outcome.unfinished) == list(range(18))
    assert set(range(6)) <= set(tallied), "the generation before the death lost schedules"
    assert set(range(12, 18)) <= set(tallied), "the run stopped at the death"
    assert "UNFINISHED" in outcome.summary()


def test_seeds_go_out_in_order_in_whole_chunks_and_the_last_ones_one_at_a_time() -> None:
    assert chunked(range(7, 47), 2, 2) == [[s, s + 1] for s in range(7, 43, 2)] + [[43], [44], [45], [46]]
    assert chunked(range(9), 2, 2) == [[0, 1], [2, 3], [4], [5], [6], [7], [8]]
    assert chunked(range(3), 2, 2) == [[0], [1], [2]]
    assert chunked(range(10), 3, 1) == [[0, 1, 2], [3, 4, 5], [6], [7], [8], [9]]
    for total in range(12):
        for chunk in (1, 2, 3):
            for workers in (1, 2, 3):
                chunks = chunked(range(total), chunk, workers)
                assert [s for c in chunks for s in c] == list(range(total))
                assert {len(c) for c in chunks} <= {chunk, 1}


def test_workers_forked_from_the_parent_s_cloud_run_the_schedules_as_one_process_does() -> None:
    """Workers are forked copies of one local cloud the parent started and never ran a schedule on."""
    forked = run_parallel(4, 2026, workers=2, chunk=1)
    alone = run(4, 2026)

    assert [t.seed for t in forked.tallies] == [2026, 2027, 2028, 2029]
    assert forked.violations == []
    assert forked.unfinished == []
    assert [t.statuses for t in forked.tallies] == [t.statuses for t in alone.tallies]
    assert [t.injected for t in forked.tallies] == [t.injected for t in alone.tallies]
    assert runner._prepared == [], "the parent's cloud outlived the run"
    assert forked.start_seconds is not None
    assert 0 < forked.start_seconds < forked.wall_seconds  # the parent's start is part of the run's time
    assert forked.to_json()["start_seconds"] == forked.start_seconds
    assert f"{forked.start_seconds:.1f} s of it starting" in forked.summary()


def _stop_like_the_command(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _sigterm_disposition() -> object:
    return signal.getsignal(signal.SIGTERM)


def test_a_forked_worker_ends_on_sigterm_whatever_handler_the_command_installed() -> None:
    """``intentbus faults`` turns SIGTERM into KeyboardInterrupt; a forked worker inheriting that would
    report the interrupt as a chunk's error and live on after the runner's ``terminate()``."""
    previous = signal.signal(signal.SIGTERM, _stop_like_the_command)
    runner._prepared.append(cast(FaultHarness, object()))  # the worker only adopts it
    try:
        with ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("fork"), initializer=runner._adopt_prepared_harness
        ) as pool:
            assert pool.submit(_sigterm_disposition).result() == signal.SIG_DFL
    finally:
        runner._prepared.clear()
        signal.signal(signal.SIGTERM, previous)
