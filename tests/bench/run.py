"""``make bench``: every figure of one run, written to ``.bench/results.json`` and printed as tables.

Figures that depend on this machine's speed are ratios to a baseline measured in the same run.

- ``stages.<stage>``: AWS calls per event on the incident workflow (``tests.bench.aws_calls``), and CPU
  per record, framework time, X-Ray's cost and cold start against a minimal Powertools handler
  (``tests.bench.stages``, whose docstring defines each key); ``stages.baseline``: that handler's own.
- ``per_step``: the request charges of one workflow step against Step Functions Standard.
- ``goals``: issue 18's goals for the stages, each met or not in this run.
- The sections of ``MEASURED_ELSEWHERE`` (cost model, local cloud, fault harness): each a function of its
  own ``tests/bench`` module returning a dict, written under its section's key.
"""

from __future__ import annotations

import importlib
import json
import logging
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.bench import aws_calls, stages

ROOT = Path(__file__).resolve().parents[2]

# List prices, us-east-1 (see the README): what one workflow step costs in requests.
STEP_FUNCTIONS_PER_TRANSITION = 0.025 / 1000
EVENTBRIDGE_PER_EVENT = 1.00 / 1_000_000
SQS_PER_REQUEST = 0.40 / 1_000_000
LAMBDA_PER_REQUEST = 0.20 / 1_000_000
DYNAMODB_PER_WRITE_UNIT = 0.625 / 1_000_000
DYNAMODB_PER_READ_UNIT = 0.125 / 1_000_000


DYNAMODB_BUDGET = {"execute": 3}
"""DESIGN's happy-path budget per event: two DynamoDB calls, three at execute (the resource check)."""

GOALS = {
    "framework_ms_per_record": 0.25,
    "cpu_ratio": 1.5,
    "cold_start_ratio": 1.10,
}
"""Issue 18's goals 1 and 2: at most this, at every stage."""

MEASURED_ELSEWHERE: tuple[tuple[str, str, str], ...] = (
    # (section of results.json, module, function returning the section's dict)
)
"""Other figures of the same run; a module or function that is not there is reported and skipped."""


def main() -> int:
    warnings.simplefilter("ignore")
    logging.getLogger("moto").setLevel(logging.ERROR)
    calls, steps = aws_calls.measure_incident()
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
            "dynamodb_budget": budget,
            "publishes_per_event": round(counted.publishes_per_event, 3),
            "put_events_entries_per_event": round(counted.put_events_entries / counted.records, 3),
            "tool_calls": counted.other_calls,
            **timings[stage],
        }
    figures[stages.BASELINE] = timings[stages.BASELINE]
    _print_table(call_rows)
    print(
        "DynamoDB calls within the budget (2 per event, 3 at execute with the resource check): "
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
        f"({per_step['dynamodb_calls']:.1f} DynamoDB, {per_step['put_events_calls']:.1f} PutEvents); "
        f"request charges ${per_step['request_cost_usd'] * 1e6:.2f} per million steps, "
        f"Step Functions Standard ${per_step['step_functions_cost_usd'] * 1e6:.2f} "
        f"(ratio {per_step['cost_ratio']:.2f})"
    )
    results: dict[str, Any] = {"stages": figures, "per_step": per_step, "goals": goals}
    for section, module, function in MEASURED_ELSEWHERE:
        measured = _measure_elsewhere(module, function)
        if measured is not None:
            results[section] = measured
    out = ROOT / ".bench" / "results.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 1 if over_budget else 0


def _timing_rows(timings: dict[str, dict[str, float]]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        ("stage", "cpu", "x base", "framework", "botocore", "x-ray", "calls", "cold", "x base", "cold wall")
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
                f"{figures['cold_start_wall_ms']:.0f}",
            )
        )
    return rows


def _goals(timings: dict[str, dict[str, float]]) -> dict[str, bool]:
    return {
        f"{key} <= {limit}": all(timings[stage][key] <= limit for stage in stages.STAGES)
        for key, limit in GOALS.items()
    }


def _measure_elsewhere(module: str, function: str) -> dict[str, Any] | None:
    try:
        measure: Callable[[], dict[str, Any]] = getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as missing:
        print(f"{module}.{function}: not measured ({missing})")
        return None
    return measure()


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
    """Request charges of one step (five hops) against Step Functions Standard running the same five states.

    Assumes each hop's message costs one SQS send (by EventBridge), receive and delete; transactional
    writes at two units per item, as DynamoDB bills them; Lambda duration is left out of both sides.
    """
    dynamodb = sum(s.dynamodb_calls for s in stages_calls.values()) / steps
    puts = sum(s.put_events_calls for s in stages_calls.values()) / steps
    entries = sum(s.put_events_entries for s in stages_calls.values()) / steps
    records = sum(s.records for s in stages_calls.values()) / steps
    other = sum(sum(s.other_calls.values()) for s in stages_calls.values()) / steps
    cost = (
        entries * EVENTBRIDGE_PER_EVENT
        + records * 3 * SQS_PER_REQUEST
        + records * LAMBDA_PER_REQUEST
        + dynamodb * 2 * DYNAMODB_PER_WRITE_UNIT
    )
    transitions = 5
    sfn = transitions * STEP_FUNCTIONS_PER_TRANSITION + records * LAMBDA_PER_REQUEST
    return {
        "aws_calls": dynamodb + puts + other,
        "dynamodb_calls": dynamodb,
        "put_events_calls": puts,
        "request_cost_usd": cost,
        "step_functions_cost_usd": sfn,
        "step_functions_transitions": transitions,
        "cost_ratio": cost / sfn,
    }


if __name__ == "__main__":
    raise SystemExit(main())
