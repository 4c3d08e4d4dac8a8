"""Seeded fault schedules over the incident, direct-tool and fan-out workflows on one local cloud.

    python -m tests.faults.run [--schedules N] [--seed S] [--kinds k1,k2] [--verbose]

Schedule i runs with seed S + i, so ``--schedules 1 --seed <a schedule's seed>`` replays it alone.
N defaults to $FAULTS (else 40); S to $FAULTS_SEED (else random, printed). Exit code 1 on any
invariant violation.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from intentbus_local.faults import ALL_KINDS
from tests.faults.harness import FaultHarness, ScheduleResult
from tests.faults.schedule import generate

DEFAULT_SCHEDULES = 40


@dataclass
class Outcome:
    seed: int
    results: list[ScheduleResult] = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def faults(self) -> Counter[str]:
        return Counter(fault.kind for result in self.results for fault in result.injected)

    @property
    def violations(self) -> list[tuple[int, str]]:
        return [(r.schedule.seed, v) for r in self.results for v in r.violations]

    @property
    def notes(self) -> list[tuple[int, str]]:
        return [(r.schedule.seed, n) for r in self.results for n in r.notes]

    @property
    def statuses(self) -> Counter[str]:
        return Counter(
            f"{run.split(' ')[0]} {status}" for r in self.results for run, status in r.statuses.items()
        )

    @property
    def per_second(self) -> float:
        return len(self.results) / self.wall_seconds if self.wall_seconds else 0.0

    def summary(self) -> str:
        lines = [
            f"schedules run: {len(self.results)} in {self.wall_seconds:.1f} s "
            f"({self.per_second:.2f} schedules/s, {sum(r.summary.total_invocations for r in self.results)} "
            "invocations)",
            "faults injected by kind: "
            + (", ".join(f"{kind} {n}" for kind, n in sorted(self.faults.items())) or "none")
            + f" (total {sum(self.faults.values())})",
            "runs by final status: " + ", ".join(f"{k} {n}" for k, n in sorted(self.statuses.items())),
            f"invariant violations: {len(self.violations)}"
            + (f" in {len({s for s, _ in self.violations})} schedule(s)" if self.violations else ""),
        ]
        lines += [f"  seed {seed}: {violation}" for seed, violation in self.violations]
        if self.notes:
            lines.append(f"notes (allowed, not violations): {len(self.notes)}")
            lines += [f"  seed {seed}: {note}" for seed, note in self.notes]
        lines.append(
            f"seed: {self.seed} (replay one schedule: python -m tests.faults.run --schedules 1 --seed <seed>)"
        )
        return "\n".join(lines)


def run(
    schedules: int,
    seed: int,
    *,
    kinds: Sequence[str] = ALL_KINDS,
    harness: FaultHarness | None = None,
    progress: Callable[[ScheduleResult], None] | None = None,
) -> Outcome:
    """Runs ``schedules`` schedules with seeds ``seed``, ``seed + 1``, ...; reuses ``harness`` if given."""
    outcome = Outcome(seed=seed)
    with FaultHarness() if harness is None else contextlib.nullcontext(harness) as running:
        started = time.monotonic()
        for index in range(schedules):
            result = running.run(generate(seed + index, kinds=kinds))
            outcome.results.append(result)
            if progress is not None:
                progress(result)
        outcome.wall_seconds = time.monotonic() - started
    return outcome


def _print_progress(verbose: bool) -> Callable[[ScheduleResult], None]:
    def report(result: ScheduleResult) -> None:
        mark = "VIOLATION" if result.violations else "ok"
        if verbose or result.violations:
            faults = ", ".join(str(f) for f in result.injected) or "no faults"
            print(f"{mark:9} {result.schedule.describe()}\n          injected: {faults}", flush=True)
            for status in sorted(f"{run}: {s}" for run, s in result.statuses.items()):
                print(f"          {status}", flush=True)
            for line in [*result.violations, *result.notes]:
                print(f"          {line}", flush=True)

    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.run", description=__doc__.split("\n")[0])
    parser.add_argument("--schedules", type=int, default=int(os.environ.get("FAULTS", DEFAULT_SCHEDULES)))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--kinds", default=",".join(ALL_KINDS), help=f"fault kinds to draw from: {ALL_KINDS}")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="print every schedule, not just failing ones"
    )
    args = parser.parse_args(argv)
    seed = args.seed
    if seed is None:
        seed = int(os.environ["FAULTS_SEED"]) if os.environ.get("FAULTS_SEED") else random.randrange(10**6)
    kinds = [kind for kind in args.kinds.split(",") if kind]
    print(f"seed: {seed}, {args.schedules} schedule(s)", flush=True)
    outcome = run(args.schedules, seed, kinds=kinds, progress=_print_progress(args.verbose))
    print(outcome.summary())
    return 1 if outcome.violations else 0


if __name__ == "__main__":
    sys.exit(main())
