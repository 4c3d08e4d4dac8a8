"""``make bench``: every figure of one run, written to ``.bench/results.json`` and printed as tables.

Figures that depend on this machine's speed are ratios to a baseline measured in the same run.

- ``stages.<stage>``: AWS calls per event on the incident workflow (``tests.bench.aws_calls``), and CPU
  per record, framework time, X-Ray's cost and cold start against a minimal Powertools handler
  (``tests.bench.stages``, whose docstring defines each key); ``stages.baseline``: that handler's own.
- ``per_step``: AWS calls of one workflow step.
- ``SECTIONS``: ``cost`` (``tests.bench.cost``: the cost model per million steps against Step Functions),
  ``local`` and ``faults`` (``tests.bench.local_speed``: the local cloud at 50 and 400 inputs, the fault
  harness on 2 workers), ``idempotency`` (``tests.bench.idempotency_latency``: execute's added latency
  on DynamoDB and on Redis), ``brokers`` (``tests.bench.brokers``: the broker ingress against validate
  on the bus); each module's docstring defines its keys.
- ``goals``: the performance and cost goals, each met or not in this run.

``make bench LOAD=N`` runs the load run instead (``tests.bench.load``).
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.bench import aws_calls, brokers, cost, idempotency_latency, local_speed, stages

ROOT = Path(__file__).resolve().parents[2]

DYNAMODB_BUDGET: dict[str, int] = {"execute": 3}
"""DESIGN's happy-path budget per event: two DynamoDB calls at every stage, three at execute (the guard's
read of the run and the authorization, the claim with the idempotency put, Powertools' save)."""

GOALS = {
    "framework_ms_per_record": 0.25,
    "cpu_ratio": 1.5,
    "cold_start_ratio": 1.10,
}
"""The stages' goals: at most this, at every stage."""

SECTIONS: tuple[tuple[str, Callable[[], Mapping[str, Any]]], ...] = (
    ("cost", cost.measure_cost),
    ("local", local_speed.measure_local),
    ("faults", local_speed.measure_faults),
    ("idempotency", idempotency_latency.measure_idempotency),
    ("brokers", brokers.measure),
)
"""The other figures of the same run, each written under its section of results.json."""

SECTION_GOALS: tuple[tuple[str, str, str, float], ...] = (
    ("cost", "ratio_sfn_standard", "<=", 0.15),
    ("cost", "ratio_sfn_standard_provisioned", "<=", 0.15),
    ("local", "inputs_per_second", ">=", 30.0),
    ("local", "scaling", "<=", 1.3),
    ("faults", "schedules_per_second", ">=", 10.0),
)
"""The cost and local-cloud goals: (section, figure, comparison, limit)."""


def main() -> int:
    warnings.simplefilter("ignore")
    logging.getLogger("moto").setLevel(logging.ERROR)
    calls, steps = aws_calls.measure_incident()
    in_batches, _ = aws_calls.measure_fleet()  # ten runs at once: batches of distinct runs
    timings = stages.measure_stages()

    figures: dict[str, Any] = {}
    over_budget: list[str] = []
    call_rows = [("stage", "records", "ddb/event", "ddb budget", "PutEvents/event", "entries/event")]
    for stage in stages.STAGES:
        counted = calls[stage]
        budget = DYNAMODB_BUDGET.get(stage, 2)
        if counted.dynamodb_per_event > budget:
            over_budget.append(stage)
        call_rows.append(
            (
                stage,
                str(counted.records),
                f"{counted.dynamodb_per_event:.2f}",
                str(budget),
                f"{counted.publishes_per_event:.2f}",
                f"{counted.put_events_entries / counted.records:.2f}",
            )
        )
        figures[stage] = {
            "records": counted.records,
            "dynamodb_calls_per_event": round(counted.dynamodb_per_event, 3),
            "dynamodb_calls_per_event_in_batches": round(in_batches[stage].dynamodb_per_event, 3),
            "dynamodb_budget": budget,
            "publishes_per_event": round(counted.publishes_per_event, 3),
            "put_events_entries_per_event": round(counted.put_events_entries / counted.records, 3),
            "tool_calls": counted.other_calls,
            **timings[stage],
        }
    figures[stages.BASELINE] = timings[stages.BASELINE]
    _print_table(call_rows)
    print(
        "DynamoDB calls within the budget (2 per event, 3 at execute): "
        + ("yes" if not over_budget else f"NO, over in {', '.join(over_budget)}")
    )
    figures["within_dynamodb_budget"] = not over_budget
    tools = ", ".join(f"{op} {n}" for op, n in sorted(calls["execute"].other_calls.items()))
    print(f"execute's tools also called: {tools}\n")

    print("per record, warm, batches of 10, AWS answered at botocore's HTTP send (ms, medians):")
    _print_table(_timing_rows(timings))
    print(
        "baseline: a Powertools SQS BatchProcessor handler making one PutItem and one PutEvents per record;"
        " tracing off, except x-ray (on - off) and cold start (import and first record, CPU ms, X-Ray on)\n"
    )
    goals = _goals(timings)
    for goal, met in goals.items():
        print(f"goal {goal}: {'met' if met else 'NOT met'}")

    per_step = _per_step(calls, steps)
    print(
        f"\nper workflow step ({steps} steps): {per_step['aws_calls']:.1f} AWS calls "
        f"({per_step['dynamodb_calls']:.1f} DynamoDB, {per_step['put_events_calls']:.1f} PutEvents)"
    )
    results: dict[str, Any] = {"stages": figures, "per_step": per_step, "goals": goals}
    for section, measure in SECTIONS:
        print(f"\n{section}:")
        results[section] = dict(measure())
        for key, value in results[section].items():
            if isinstance(value, int | float | str):
                print(f"  {key}: {value}")
    for section, key, comparison, limit in SECTION_GOALS:
        value = float(results[section][key])
        met = value <= limit if comparison == "<=" else value >= limit
        goals[f"{section}.{key} {comparison} {limit}"] = met
        print(f"goal {section}.{key} {comparison} {limit}: {value:g}, {'met' if met else 'NOT met'}")
    out = ROOT / ".bench" / "results.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 1 if over_budget else 0


def _timing_rows(timings: dict[str, dict[str, float]]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        (
            "stage",
            "cpu",
            "x base",
            "framework",
            "botocore",
            "x-ray",
            "calls",
            "cold",
            "x base",
            "less tool",
            "cold wall",
        )
    ]
    for name in (*stages.STAGES, stages.BASELINE):
        figures = timings[name]
        rows.append(
            (
                name,
                f"{figures['cpu_ms_per_record']:.3f}",
                f"{figures['cpu_ratio']:.2f}",
                f"{figures['framework_ms_per_record']:.3f}",
                f"{figures['botocore_ms_per_record']:.3f}",
                f"{figures['xray_ms_per_record']:.3f}",
                f"{figures['aws_calls_per_record']:.1f}",
                f"{figures['cold_start_ms']:.0f}",
                f"{figures['cold_start_ratio']:.2f}",
                f"{figures['cold_start_ratio_without_tool']:.2f}",
                f"{figures['cold_start_wall_ms']:.0f}",
            )
        )
    return rows


def _goals(timings: dict[str, dict[str, float]]) -> dict[str, bool]:
    return {
        f"{key} <= {limit}": all(timings[stage][key] <= limit for stage in stages.STAGES)
        for key, limit in GOALS.items()
    }


def _print_table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for number, row in enumerate(rows):
        print(
            "  ".join(
                cell.rjust(width) if column else cell.ljust(width)
                for column, (cell, width) in enumerate(zip(row, widths, strict=True))
            )
        )
        if number == 0:
            print("  ".join("-" * width for width in widths))


def _per_step(stages_calls: dict[str, aws_calls.StageCalls], steps: int) -> dict[str, float]:
    """AWS calls of one step (five hops); what they cost is the cost model's (``cost``)."""
    dynamodb = sum(s.dynamodb_calls for s in stages_calls.values()) / steps
    puts = sum(s.put_events_calls for s in stages_calls.values()) / steps
    other = sum(sum(s.other_calls.values()) for s in stages_calls.values()) / steps
    return {"aws_calls": dynamodb + puts + other, "dynamodb_calls": dynamodb, "put_events_calls": puts}


if __name__ == "__main__":
    raise SystemExit(main())
