"""``make bench``: AWS calls per stage and per step, and cold-start import time against a baseline.

Figures that depend on this machine's speed are given as ratios to a baseline measured in the
same run. Writes ``.bench/results.json``.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Sequence
from pathlib import Path

from tests.bench import aws_calls, cold_start, decide_overhead

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


def main() -> int:
    warnings.simplefilter("ignore")
    logging.getLogger("moto").setLevel(logging.ERROR)
    stages, steps = aws_calls.measure_incident()
    imports = cold_start.measure()
    baseline = imports[cold_start.BASELINE]

    rows = [("stage", "records", "ddb/event", "ddb budget", "publish/event", "import ms", "x baseline")]
    figures: dict[str, object] = {}
    over_budget: list[str] = []
    for stage in cold_start.STAGES:
        calls = stages[stage]
        ratio = imports[stage] / baseline
        budget = DYNAMODB_BUDGET.get(stage, 2)
        if calls.dynamodb_per_event > budget:
            over_budget.append(stage)
        rows.append(
            (
                stage,
                str(calls.records),
                f"{calls.dynamodb_per_event:.2f}",
                str(budget),
                f"{calls.publishes_per_event:.2f}",
                f"{imports[stage]:.0f}",
                f"{ratio:.2f}",
            )
        )
        figures[stage] = {
            "records": calls.records,
            "dynamodb_calls_per_event": round(calls.dynamodb_per_event, 3),
            "dynamodb_budget": budget,
            "publishes_per_event": round(calls.publishes_per_event, 3),
            "put_events_entries_per_event": round(calls.put_events_entries / calls.records, 3),
            "tool_calls": calls.other_calls,
            "cold_start_ms": round(imports[stage], 1),
            "cold_start_ratio": round(ratio, 3),
        }
    rows.append(("baseline", "", "", "", "", f"{baseline:.0f}", "1.00"))
    _print_table(rows)
    print(
        "DynamoDB calls within the budget (2 per event, 3 at execute with the resource check): "
        + ("yes" if not over_budget else f"NO, over in {', '.join(over_budget)}")
    )
    figures["within_dynamodb_budget"] = not over_budget
    tools = ", ".join(f"{op} {n}" for op, n in sorted(stages["execute"].other_calls.items()))
    print(f"execute's tools also called: {tools}")
    print("baseline: a handler importing boto3 and Powertools Logger, Tracer and Metrics, in a fresh process")

    per_step = _per_step(stages, steps)
    print(
        f"per workflow step ({steps} steps): {per_step['aws_calls']:.1f} AWS calls "
        f"({per_step['dynamodb_calls']:.1f} DynamoDB, {per_step['put_events_calls']:.1f} PutEvents); "
        f"request charges ${per_step['request_cost_usd'] * 1e6:.2f} per million steps, "
        f"Step Functions Standard ${per_step['step_functions_cost_usd'] * 1e6:.2f} "
        f"(ratio {per_step['cost_ratio']:.2f})"
    )
    results = {"stages": figures, "baseline_cold_start_ms": round(baseline, 1), "per_step": per_step}
    results["decide_overhead"] = decide_overhead.report()
    out = ROOT / ".bench" / "results.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 1 if over_budget else 0


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


def _per_step(stages: dict[str, aws_calls.StageCalls], steps: int) -> dict[str, float]:
    """Request charges of one step (five hops) against Step Functions Standard running the same five states.

    Assumes each hop's message costs one SQS send (by EventBridge), receive and delete; transactional
    writes at two units per item, as DynamoDB bills them; Lambda duration is left out of both sides.
    """
    dynamodb = sum(s.dynamodb_calls for s in stages.values()) / steps
    puts = sum(s.put_events_calls for s in stages.values()) / steps
    entries = sum(s.put_events_entries for s in stages.values()) / steps
    records = sum(s.records for s in stages.values()) / steps
    other = sum(sum(s.other_calls.values()) for s in stages.values()) / steps
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
