"""How fast the local cloud runs a batch of inputs, and how that holds as the batch grows.

``measure_local()`` runs what ``intentbus local run`` runs (emit every input on the ingress bus, run
until nothing is in flight, read back where each ended) for 50 and then 400 direct tool calls (the
seed's request, each under a run id and idempotency key of its own), each on a fresh local cloud in
this process. Returns:

- ``inputs_per_second``: 400 inputs ÷ the seconds from the first emit to the finished report;
- ``scaling``: seconds per input at 400 ÷ seconds per input at 50 (1.0: linear; above: it slows down
  as work piles up);
- ``seconds_50``, ``seconds_400``: those wall-clock seconds; ``cpu_seconds_50``, ``cpu_seconds_400``:
  the process's CPU seconds over the same span (steadier than wall time on a busy machine);
- ``start_seconds_400``: starting that local cloud (deploying the template), which is not counted above.

``measure_faults()`` runs ``make faults``' schedules (40, seed 7) on 2 workers through the CLI and
returns ``schedules_per_second`` (the goal's figure: the schedules over the whole run's seconds),
``schedules``, ``workers``, ``seconds``, ``violations`` (which must be 0) and ``exit_status``, and, where
the workers are forked from the parent's local cloud, ``start_seconds`` (the part of ``seconds`` the
parent spent starting it, before any schedule ran) and ``schedules_per_second_after_start`` (the
schedules over the rest): a short run's figure is much of it start. ``cpu_seconds`` is the CPU the run
took, its workers' included, and ``schedules_per_second_by_cpu`` the schedules over that CPU shared by the
workers: what the run would do on as many cores of its own, with no idle tail. Wall time on a machine
others share moves with their load (±20% between runs of the same code here); CPU time much less.

``python -m tests.bench.local_speed`` prints both.
"""

from __future__ import annotations

import contextlib
import json
import logging
import resource
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "infra" / "events" / "seed_tool_call.json"
SIZES = (50, 400)


def tool_calls(count: int) -> list[tuple[int, dict[str, Any]]]:
    """``count`` distinct direct tool calls, as (line, envelope) like ``read_envelopes`` gives them."""
    seed = json.loads(SEED.read_text())
    return [
        (
            number,
            {
                **seed,
                "run_id": f"run_bench_{number:06d}",
                "trace_id": f"tr_bench_{number:06d}",
                "idempotency_key": f"idem_bench_{number:06d}",
                "payload": {
                    "tool_name": "crm_record_upsert",
                    "parameters": {"customer_id": f"cust_{number}", "status": "qualified"},
                },
            },
        )
        for number in range(1, count + 1)
    ]


def run_inputs(count: int) -> dict[str, Any]:
    """One ``local run`` of ``count`` tool calls on a fresh in-process local cloud: its timings and counts."""
    from intentbus_cli.local import _catalog, _emit, _run
    from intentbus_local import report as reporting
    from intentbus_local.cloud import LocalCloud

    inputs = tool_calls(count)
    with quiet():
        started = time.perf_counter()
        cloud = LocalCloud(parameters={"Environment": "dev"})
        cloud.start()
        try:
            ready = time.perf_counter()
            cpu = time.process_time()
            sent = _emit(cloud, inputs)
            summary = _run(cloud, count)
            result = reporting.build(cloud, _catalog(cloud), sent)
            cpu_seconds = time.process_time() - cpu
            seconds = time.perf_counter() - ready
        finally:
            cloud.close()
    return {
        "inputs": count,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "start_seconds": ready - started,
        "idle": summary.idle,
        "counts": result.counts,
        "invocations": summary.total_invocations,
    }


def measure_local() -> dict[str, Any]:
    small, large = (run_inputs(size) for size in SIZES)
    for run in (small, large):
        if not run["idle"] or run["counts"] != {"applied": run["inputs"]}:
            raise RuntimeError(f"the local run did not apply every input: {run}")
    per_input = {run["inputs"]: run["seconds"] / run["inputs"] for run in (small, large)}
    return {
        "inputs_per_second": round(large["inputs"] / large["seconds"], 2),
        "scaling": round(per_input[SIZES[1]] / per_input[SIZES[0]], 3),
        "seconds_50": round(small["seconds"], 2),
        "seconds_400": round(large["seconds"], 2),
        "cpu_seconds_50": round(small["cpu_seconds"], 2),
        "cpu_seconds_400": round(large["cpu_seconds"], 2),
        "start_seconds_400": round(large["start_seconds"], 2),
    }


FAULT_WORKFLOWS = (
    "intentbus.workflows.incident,intentbus.workflows.direct_tool,intentbus_faults.fanout_workflow"
)
"""What ``make faults`` runs."""
FAULT_SCHEDULES = 40
FAULT_WORKERS = 2
FAULT_SEED = 7


def measure_faults() -> dict[str, Any]:
    """``make faults``' schedules (40 of them, seed 7) on 2 workers, through the CLI."""
    import tempfile

    from intentbus_cli.main import main as intentbus

    with tempfile.TemporaryDirectory() as folder, quiet():
        tallies = Path(folder) / "faults.json"
        cpu_before = _cpu_seconds()
        status = intentbus(
            [
                "faults",
                "--workflows",
                FAULT_WORKFLOWS,
                "--schedules",
                str(FAULT_SCHEDULES),
                "--workers",
                str(FAULT_WORKERS),
                "--seed",
                str(FAULT_SEED),
                "--json",
                str(tallies),
            ]
        )
        cpu_seconds = _cpu_seconds() - cpu_before
        outcome = json.loads(tallies.read_text())
    seconds = float(outcome["wall_seconds"])
    start = outcome["start_seconds"]
    return {
        "schedules_per_second": round(outcome["schedules"] / seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "schedules_per_second_by_cpu": round(outcome["schedules"] * outcome["workers"] / cpu_seconds, 2),
        "schedules": outcome["schedules"],
        "workers": outcome["workers"],
        "seconds": round(seconds, 2),
        "start_seconds": None if start is None else round(float(start), 2),
        "schedules_per_second_after_start": None
        if start is None
        else round(outcome["schedules"] / (seconds - float(start)), 2),
        "violations": len(outcome["violations"]),
        "exit_status": status,
    }


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (the fault run's workers, once
    its pool is shut down)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """moto's warnings about resources it does not model kept out of the figures."""
    moto_logger = logging.getLogger("moto")
    level = moto_logger.level
    moto_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        moto_logger.setLevel(level)


def _lines(figures: dict[str, Any]) -> Iterator[str]:
    for key, value in figures.items():
        yield f"  {key}: {value}"


def main(argv: list[str]) -> int:
    """``python -m tests.bench.local_speed [local|faults]`` (both by default)."""
    wanted = set(argv) or {"local", "faults"}
    if "local" in wanted:
        print("local cloud (direct tool calls):")
        print("\n".join(_lines(measure_local())), flush=True)
    if "faults" in wanted:
        print("fault harness:")
        print("\n".join(_lines(measure_faults())), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
