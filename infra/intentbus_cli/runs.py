"""``intentbus runs``: a tenant's runs (list), one run's timeline from its durable log (show)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus_cli import tables
from intentbus_cli.run_view import RunView, build


def when(at: datetime | None) -> str:
    if at is None:
        return "-"
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def list_runs(store: DynamoWorkflowStore, tenant_id: str, status: str | None, *, as_json: bool) -> int:
    found = store.runs(tenant_id, status)
    if as_json:
        print(json.dumps([run.model_dump(mode="json") for run in found], indent=2))
        return 0
    tables.show(
        ("run", "workflow", "status", "steps", "version", "started", "updated", "reason"),
        [
            (
                run.run_id,
                run.workflow,
                run.status.value,
                str(run.steps_taken),
                str(run.version),
                when(run.started_at),
                when(run.updated_at),
                run.reason or "",
            )
            for run in found
        ],
    )
    print(f"{len(found)} run(s) for {tenant_id}" + (f" with status {status}" if status else ""))
    return 0


def show_run(store: DynamoWorkflowStore, tenant_id: str, run_id: str, *, as_json: bool) -> int:
    view = build(tenant_id, run_id, store.state(tenant_id, run_id), store.entries(tenant_id, run_id))
    if view.status is None and not view.timeline:
        print(f"intentbus: no run {run_id} for tenant {tenant_id}", file=sys.stderr)
        return 1
    if as_json:
        print(view.model_dump_json(indent=2))
        return 0
    print(render_header(view))
    tables.show(*timeline_table(view))
    print(f"{len(view.timeline)} moment(s) in the durable log")
    return 0


def render_header(view: RunView) -> str:
    status = view.status or "no state recorded"
    lines = [
        f"run {view.run_id} (tenant {view.tenant_id}): {view.workflow or '?'} {status}"
        + (f" ({view.reason})" if view.reason else ""),
        f"version {view.version if view.version is not None else '-'}, step {view.step_index or 0}, "
        f"started {when(view.started_at)}, updated {when(view.updated_at)}",
    ]
    return "\n".join(lines)


def timeline_table(view: RunView) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    headers = (
        "time",
        "t+ms",
        "stage",
        "kind",
        "type",
        "outcome",
        "actor",
        "input",
        "ids",
        "published",
        "reason",
    )
    rows: list[tuple[str, ...]] = [
        (
            when(event.at),
            f"{event.offset_ms:.0f}",
            event.stage,
            event.kind.value,
            event.type,
            event.outcome,
            event.actor or "-",
            event.input_id[:12],
            ",".join(f"{key.removesuffix('_id')}:{value[:8]}" for key, value in event.ids.items()) or "-",
            ",".join(published.type for published in event.published) or "-",
            event.reason or "",
        )
        for event in view.timeline
    ]
    return headers, rows
