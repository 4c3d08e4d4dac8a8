"""The CLI's local-cloud commands; they need the ``local`` extra (moto, samtranslator, cfn-lint)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

Mode = Literal["server", "inprocess"]


def demo(*, mode: Mode, environment: str, decision: Literal["approve", "reject"] | None) -> int:
    from intentbus_local.demo import run, terminal_prompt

    result = run(mode=mode, environment=environment, decision=decision, ask=terminal_prompt())
    if not result.succeeded:
        print("demo: the run did not complete as expected")
        return 1
    return 0


def run_events(
    events: Path,
    *,
    report: Path | None,
    mode: Mode,
    environment: str,
    seed_demo: bool = False,
    built: Path | None = None,
) -> int:
    """``built``: a sam build directory to run instead of the source tree (needs ``mode="server"``)."""
    from intentbus.catalog import Catalog
    from intentbus.cli.emit import read_envelopes
    from intentbus_local import report as reporting
    from intentbus_local import seed
    from intentbus_local.cloud import LocalCloud

    lines = list(read_envelopes(events))
    with LocalCloud(mode=mode, parameters={"Environment": environment}, built=built) as cloud:
        if seed_demo:
            seed.seed_service(cloud.clients)
            seed.seed_metrics(cloud.clients)
        workflows = cloud.topology.functions["ValidateFunction"].environment["INTENTBUS_WORKFLOWS"]
        sent = []
        for number, envelope in lines:
            source = str(envelope.get("source", "intentbus.cli"))  # emit's default source too
            detail_type = str(envelope.get("type", envelope.get("event_type", "Unknown")))
            (bus_event_id,) = cloud.put_events(  # on the ingress bus, as a producer
                [{"Source": source, "DetailType": detail_type, "Detail": json.dumps(envelope)}]
            )
            sent.append((number, envelope, bus_event_id, source))
        summary = cloud.run_until_idle(
            max_invocations=20 * len(lines) + 100, deadline_seconds=600, raise_on_limit=False
        )
        result = reporting.build(cloud, Catalog.from_modules(workflows), sent)
    for item in result.inputs:
        where = f"{item.type or '?'} {item.event_id or ''}".strip()
        print(f"line {item.line}: {item.bucket:<11} {where}" + (f" — {item.reason}" if item.reason else ""))
    for workflow in result.workflows:
        print(f"run {workflow['run_id']} ({workflow['workflow']}): {workflow['status']}")
    print(
        ", ".join(f"{count} {bucket}" for bucket, count in sorted(result.counts.items()))
        + f"; {summary.total_invocations} invocations"
        + ("" if summary.idle else f"; NOT IDLE: {summary.stop_reason}")
    )
    if report is not None:
        reporting.write(result, report)
    return 0 if summary.idle and "lost" not in result.counts else 1
