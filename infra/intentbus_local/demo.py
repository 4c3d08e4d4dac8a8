"""``make demo``: the incident workflow on the local cloud, from a latency alert to a scaled service."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.cli.timeline import render
from intentbus.journal import LogEntry
from intentbus.state import Status, WorkflowState
from intentbus_local import seed
from intentbus_local.backend import Mode
from intentbus_local.cloud import LocalCloud, RunSummary


@dataclass(frozen=True)
class DemoResult:
    state: WorkflowState | None
    entries: list[LogEntry]
    desired_before: int
    desired_after: int
    summary: RunSummary

    @property
    def succeeded(self) -> bool:
        return (
            self.state is not None
            and self.state.status is Status.COMPLETED
            and self.desired_after > self.desired_before
        )


def run(*, mode: Mode = "server", environment: str = "dev", say: Callable[[str], None] = print) -> DemoResult:
    with LocalCloud(mode=mode, parameters={"Environment": environment}) as cloud:
        where = cloud.endpoint_url or "moto in this process"
        say(
            f"local cloud up ({where}): stack {cloud.topology.stack_name}, bus {cloud.topology.bus_name}, "
            f"{len(cloud.topology.functions)} functions, {len(cloud.topology.queues)} queues"
        )
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        before = seed.desired_count(cloud.clients)
        say(f"seeded ECS service {seed.CLUSTER}/{seed.SERVICE} (desired count {before}) and its metrics")
        event = seed.latency_event(environment=environment)
        cloud.put_events(
            [{"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)}]
        )
        say(f"emitted ServiceLatencyIncreased (p99 {event['payload']['p99_ms']:g} ms) to the bus")
        summary = cloud.run_until_idle(max_invocations=500, deadline_seconds=90)
        store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        runs = store.runs(event["tenant_id"])
        state = runs[0] if runs else None
        entries = store.entries(event["tenant_id"], state.run_id) if state else []
        after = seed.desired_count(cloud.clients)
        say("")
        say(render(entries))
        say("")
        say(
            f"{summary.total_invocations} Lambda invocations in {summary.wall_seconds:.1f} s; "
            f"run {state.run_id if state else '?'}: {state.status.value if state else 'not found'}"
        )
        say(f"ECS {seed.CLUSTER}/{seed.SERVICE} desired count: {before} -> {after}")
        return DemoResult(
            state=state, entries=entries, desired_before=before, desired_after=after, summary=summary
        )
