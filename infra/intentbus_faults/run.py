"""Runs seeded fault schedules over the workflows under test on one local cloud (or one per worker).

Schedule i runs with seed S + i, so ``--schedules 1 --seed <a schedule's seed>`` replays it alone.
Worker processes take the seeds in chunks, each on its own local cloud, and are replaced by fresh
ones every few hundred schedules. Where the platform forks, the parent starts one local cloud (imports,
template, tables, queues, seed data) before any schedule ran and every worker is forked from it, so a
worker starts with a copy of a ready cloud instead of building its own; the parent's copy never runs a
schedule, so each generation of workers starts from the same pristine cloud.
``intentbus faults`` (intentbus_cli.faults) is the command line.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import multiprocessing
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from pathlib import Path

from intentbus_faults.harness import FaultHarness, ScheduleResult
from intentbus_faults.schedule import FORGE, KINDS, SEED_DRIVE, WORKFLOWS, Drive, generate

DEFAULT_SCHEDULES = 40


@dataclass(frozen=True)
class Target:
    """What the schedules run over (sent to worker processes, so plain data)."""

    workflows: str = WORKFLOWS
    """``INTENTBUS_WORKFLOWS``: comma-separated ``module`` or ``module:attribute``."""
    template: Path | None = None
    """The SAM template the local cloud deploys (None: the project's own)."""
    drive: Drive = SEED_DRIVE
    paths: tuple[str, ...] = ()
    """Put first on ``sys.path`` (in every worker too), so the workflows' modules import."""
    idempotency: str = "dynamodb"
    """Execute's idempotency store: "dynamodb" or "redis"."""

    def harness(self) -> FaultHarness:
        for path in reversed(self.paths):
            if path not in sys.path:
                sys.path.insert(0, path)
        return FaultHarness(
            workflows=self.workflows, template=self.template, drive=self.drive, idempotency=self.idempotency
        )


CHUNK_SCHEDULES = 2
"""Small: schedules take 0.2 to 2 s each, and a worker left without work while the other finishes
a long chunk is the run's tail."""
SCHEDULES_PER_PROCESS = 200


@dataclass(frozen=True)
class Tally:
    """What one schedule came to, small enough to send back from a worker process."""

    seed: int
    description: str
    faults: dict[str, int]
    injected: list[str]
    violations: list[str]
    notes: list[str]
    statuses: dict[str, str]
    invocations: int
    wall_seconds: float
    forged: dict[str, int] = field(default_factory=dict)
    """``<forgery> -> <where it ended>`` -> how many forged messages did so (the ``forge`` kind)."""
    lapses: int = 0
    """Lapsed in-progress leases detected (each attempt then went to the reconcile path)."""

    @classmethod
    def of(cls, result: ScheduleResult) -> Tally:
        return cls(
            seed=result.schedule.seed,
            description=result.schedule.describe(),
            faults=dict(
                Counter([*(fault.kind for fault in result.injected), *(FORGE for _ in result.forged)])
            ),
            injected=[str(fault) for fault in result.injected],
            violations=list(result.violations),
            notes=list(result.notes),
            statuses=dict(result.statuses),
            invocations=result.summary.total_invocations,
            wall_seconds=result.wall_seconds,
            forged=dict(Counter(f"{forged.variant} -> {end}" for forged, end in result.forged)),
            lapses=result.lapses,
        )


@dataclass
class Outcome:
    seed: int
    tallies: list[Tally] = field(default_factory=list)
    results: list[ScheduleResult] = field(default_factory=list)
    """The full results, when the schedules ran in this process."""
    wall_seconds: float = 0.0
    start_seconds: float | None = None
    """Of ``wall_seconds``, the parent's start of the local cloud its forked workers copy, before any
    schedule ran (None where each worker starts its own)."""
    workers: int = 1
    unfinished: list[int] = field(default_factory=list)
    """Seeds whose worker process died before reporting them (e.g. killed for memory)."""
    not_run: int = 0
    """Schedules never started because the run was interrupted (Ctrl-C / SIGINT)."""
    replay: str = "intentbus faults --schedules 1 --seed <seed>"
    """The command that replays one schedule (``<seed>`` stands for its seed)."""

    @property
    def faults(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for tally in self.tallies:
            total.update(tally.faults)
        return total

    @property
    def forged(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for tally in self.tallies:
            total.update(tally.forged)
        return total

    @property
    def violations(self) -> list[tuple[int, str]]:
        return [(t.seed, v) for t in self.tallies for v in t.violations]

    @property
    def notes(self) -> list[tuple[int, str]]:
        return [(t.seed, n) for t in self.tallies for n in t.notes]

    @property
    def statuses(self) -> Counter[str]:
        return Counter(
            f"{run.split(' ')[0]} {status}" for t in self.tallies for run, status in t.statuses.items()
        )

    @property
    def per_second(self) -> float:
        return len(self.tallies) / self.wall_seconds if self.wall_seconds else 0.0

    def summary(self, *, max_listed: int = 50) -> str:
        violations, notes = self.violations, self.notes
        started = "" if self.start_seconds is None else f", {self.start_seconds:.1f} s of it starting"
        lines = [
            f"schedules run: {len(self.tallies)} in {self.wall_seconds:.1f} s with {self.workers} worker(s) "
            f"({self.per_second:.2f} schedules/s{started}, "
            f"{sum(t.invocations for t in self.tallies)} invocations)",
            "faults injected by kind: "
            + (", ".join(f"{kind} {n}" for kind, n in sorted(self.faults.items())) or "none")
            + f" (total {sum(self.faults.values())})",
            "runs by final status: " + ", ".join(f"{k} {n}" for k, n in sorted(self.statuses.items())),
            *self._forged_lines(),
            f"lapsed leases detected and reconciled: {sum(t.lapses for t in self.tallies)}",
            f"invariant violations: {len(violations)}"
            + (f" in {len({s for s, _ in violations})} schedule(s)" if violations else ""),
        ]
        if self.unfinished:
            lines.append(
                f"UNFINISHED: {len(self.unfinished)} schedule(s) lost with their worker process, "
                f"seeds {self.unfinished[0]}..{self.unfinished[-1]} (see --json)"
            )
        if self.not_run:
            lines.append(
                f"INTERRUPTED: {self.not_run} schedule(s) not run; the figures above are of those that ran"
            )
        codes = Counter(violation.split(")")[0] + ")" for _, violation in violations)
        if codes:
            lines.append("  by code: " + ", ".join(f"{code} {n}" for code, n in sorted(codes.items())))
        lines += [f"  seed {seed}: {violation}" for seed, violation in violations[:max_listed]]
        if len(violations) > max_listed:
            lines.append(f"  ... and {len(violations) - max_listed} more (see --json)")
        if notes:
            lines.append(f"notes (allowed, not violations): {len(notes)}")
            lines += [f"  seed {seed}: {note}" for seed, note in notes[:max_listed]]
        lines.append(f"seed: {self.seed} (replay one schedule: {self.replay})")
        if violations:
            first = violations[0][0]
            lines.append(f"FAILED: seed {first}; replay it: {self.replay.replace('<seed>', str(first))}")
        return "\n".join(lines)

    def _forged_lines(self) -> list[str]:
        forged = self.forged
        ends: Counter[str] = Counter()
        for key, n in forged.items():
            ends[key.split(" -> ", 1)[1]] += n
        return [
            f"forged messages: {sum(forged.values())}; where they ended: "
            + (", ".join(f"{end} {n}" for end, n in sorted(ends.items())) or "none"),
            *(f"  {key}: {n}" for key, n in sorted(forged.items())),
        ]

    def to_json(self) -> dict[str, object]:
        return {
            "seed": self.seed,
            "schedules": len(self.tallies),
            "workers": self.workers,
            "wall_seconds": self.wall_seconds,
            "start_seconds": self.start_seconds,
            "faults": dict(self.faults),
            "statuses": dict(self.statuses),
            "forged": dict(self.forged),
            "lapses": sum(t.lapses for t in self.tallies),
            "unfinished": self.unfinished,
            "not_run": self.not_run,
            "violations": [{"seed": s, "violation": v} for s, v in self.violations],
            "notes": [{"seed": s, "note": n} for s, n in self.notes],
            "tallies": [asdict(t) for t in self.tallies],
        }


def run(
    schedules: int,
    seed: int,
    *,
    kinds: Sequence[str] = KINDS,
    harness: FaultHarness | None = None,
    target: Target = Target(),
    progress: Callable[[Tally], None] | None = None,
) -> Outcome:
    """Runs ``schedules`` schedules with seeds ``seed``, ``seed + 1``, ...; reuses ``harness`` if given."""
    outcome = Outcome(seed=seed)
    with target.harness() if harness is None else contextlib.nullcontext(harness) as running:
        started = time.monotonic()
        try:
            for index in range(schedules):
                result = running.run(generate(seed + index, kinds=kinds, drive=running.drive))
                tally = Tally.of(result)
                outcome.results.append(result)
                outcome.tallies.append(tally)
                if progress is not None:
                    progress(tally)
        except KeyboardInterrupt:
            outcome.not_run = schedules - len(outcome.tallies)
        outcome.wall_seconds = time.monotonic() - started
    return outcome


def run_parallel(
    schedules: int,
    seed: int,
    *,
    workers: int,
    kinds: Sequence[str] = KINDS,
    target: Target = Target(),
    progress: Callable[[Tally], None] | None = None,
    chunk: int = CHUNK_SCHEDULES,
    schedules_per_process: int = SCHEDULES_PER_PROCESS,
    start_worker: Callable[[], None] | None = None,
    run_chunk: Callable[[list[int], list[str]], list[Tally]] | None = None,
) -> Outcome:
    """The same schedules over ``workers`` processes, each with its own in-process local cloud (a forked
    copy of one the parent started, where the platform forks and execute's store is DynamoDB).

    Seeds go out in chunks of ``chunk``; a process is replaced by a fresh one (and a fresh local
    cloud) after about ``schedules_per_process`` schedules, because moto retains memory per
    schedule and a long run would otherwise exhaust the machine. A chunk whose process died is
    listed in ``Outcome.unfinished`` rather than silently dropped. ``start_worker`` and
    ``run_chunk`` (module-level functions: workers are spawned) replace the harness in tests.
    """
    outcome = Outcome(seed=seed, workers=workers)
    seeds = list(range(seed, seed + schedules))
    generation = max(1, workers * schedules_per_process)
    started = time.monotonic()
    forked = start_worker is None and _forks(target)
    context = multiprocessing.get_context("fork" if forked else "spawn")
    spawned = start_worker or functools.partial(_start_worker_harness, target)
    initializer = _adopt_prepared_harness if forked else spawned
    with _prepared_for_fork(target) if forked else contextlib.nullcontext():
        if forked:
            outcome.start_seconds = time.monotonic() - started
        # A fresh pool per generation rather than max_tasks_per_child, which can deadlock on 3.11.
        for first in range(0, len(seeds), generation):
            in_generation = seeds[first : first + generation]
            chunks = chunked(in_generation, chunk, workers)
            with ProcessPoolExecutor(
                max_workers=min(workers, len(chunks)), mp_context=context, initializer=initializer
            ) as pool:
                pending = {
                    pool.submit(run_chunk or _run_chunk, seeds_in_chunk, list(kinds)): seeds_in_chunk
                    for seeds_in_chunk in chunks
                }
                try:
                    for future in as_completed(pending):
                        try:
                            tallies = future.result()
                        except BrokenProcessPool:
                            outcome.unfinished.extend(pending[future])
                            continue
                        for tally in tallies:
                            outcome.tallies.append(tally)
                            if progress is not None:
                                progress(tally)
                except KeyboardInterrupt:
                    pool.shutdown(wait=False, cancel_futures=True)
                    for worker in multiprocessing.active_children():
                        worker.terminate()  # its chunk's schedules are counted as not run
                    outcome.not_run = schedules - len(outcome.tallies) - len(outcome.unfinished)
                    break
    outcome.tallies.sort(key=lambda t: t.seed)
    outcome.unfinished.sort()
    outcome.wall_seconds = time.monotonic() - started
    return outcome


def chunked(seeds: Sequence[int], chunk: int, workers: int) -> list[list[int]]:
    """``seeds`` in order, in chunks of ``chunk`` but the last ``workers * chunk`` one seed at a time:
    a worker that finishes early then takes one more schedule instead of idling while the other
    runs a whole chunk (the run's tail)."""
    whole = max(0, len(seeds) - workers * chunk)
    whole -= whole % chunk
    return [list(seeds[i : i + chunk]) for i in range(0, whole, chunk)] + [[s] for s in seeds[whole:]]


_worker_harness: list[FaultHarness] = []
"""The one harness of a worker process, started by the pool's initializer."""


def _start_worker_harness(target: Target) -> None:
    harness = target.harness()
    harness.start()
    atexit.register(harness.close)
    _worker_harness.append(harness)


_prepared: list[FaultHarness] = []
"""The parent's started harness that forked workers copy (it runs no schedule itself)."""


def _forks(target: Target) -> bool:
    # A Redis store is a server of the harness's own, which forked copies would share.
    return target.idempotency == "dynamodb" and "fork" in multiprocessing.get_all_start_methods()


@contextlib.contextmanager
def _prepared_for_fork(target: Target) -> Iterator[None]:
    """The parent's started harness; what it allocated is moved out of the garbage collector's sight
    (``gc.freeze``), so the workers' collections do not walk (and so copy) the pages they share with it."""
    with target.harness() as harness:
        _prepared.append(harness)
        gc.freeze()
        try:
            yield
        finally:
            gc.unfreeze()
            _prepared.remove(harness)


def _adopt_prepared_harness() -> None:
    """In a forked worker: the parent's harness is this process's own copy. Random state is drawn
    afresh and SIGTERM ends the process, as in a spawned worker (the command's SIGTERM handler would
    turn ``terminate()`` into an exception the worker reports and survives), and no two workers draw
    the same message ids and handles."""
    from moto.moto_api._internal import mock_random

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    random.seed()
    mock_random.seed()
    _worker_harness.append(_prepared[0])


def _run_chunk(seeds: list[int], kinds: list[str]) -> list[Tally]:
    (harness,) = _worker_harness
    return [
        Tally.of(harness.run(generate(schedule_seed, kinds=kinds, drive=harness.drive)))
        for schedule_seed in seeds
    ]


def print_progress(verbose: bool, total: int) -> Callable[[Tally], None]:
    """Prints each failing schedule (every schedule with ``verbose``) as it finishes; the count of
    schedules done is the CLI's progress bar."""

    def report(tally: Tally) -> None:
        mark = "VIOLATION" if tally.violations else "ok"
        if verbose or tally.violations:
            print(f"{mark:9} {tally.description}", flush=True)
            print(f"          injected: {', '.join(tally.injected) or 'no faults'}", flush=True)
            for status in sorted(f"{run}: {s}" for run, s in tally.statuses.items()):
                print(f"          {status}", flush=True)
            for line in [*tally.violations, *tally.notes]:
                print(f"          {line}", flush=True)

    return report
