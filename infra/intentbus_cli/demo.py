"""``make demo``: the incident workflow on the local cloud, from a latency alert to a scaled service.

In ``production`` the scale-up waits for a person: the demo serves the approvals console locally,
prints its URL and asks (in a terminal), or takes ``--approve`` / ``--reject``; with neither a
terminal nor a flag it approves by itself and says so. A decision made in the console ends the
question: the demo goes on with that decision.
"""

from __future__ import annotations

import json
import select
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.journal import ApprovalStatus, LogEntry
from intentbus.state import Status, WorkflowState
from intentbus_cli.progress import Progress, watch_pipeline
from intentbus_cli.timeline import render
from intentbus_local import seed
from intentbus_local.backend import Mode
from intentbus_local.cloud import LocalCloud, RunSummary
from intentbus_local.http_front import HttpFront, LocalUser

Decision = Literal["approve", "reject"]
OPERATOR = "operator@example.com"
INCIDENT_WORKFLOW = "incident_response"

Ask = Callable[[str, Callable[[], bool]], "str | None"]
"""Asks a person ``question``; the reply, or ``None`` once ``settled()`` (decided elsewhere) says so first.
End of input raises ``EOFError``, Ctrl-C ``KeyboardInterrupt``: the CLI says so in one line."""

_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class DemoResult:
    state: WorkflowState | None
    entries: list[LogEntry]
    desired_before: int
    desired_after: int
    summary: RunSummary
    decision: Decision | None

    @property
    def succeeded(self) -> bool:
        if self.state is None:
            return False
        if self.decision == "reject":
            return self.state.status is Status.DENIED and self.desired_after == self.desired_before
        return self.state.status is Status.COMPLETED and self.desired_after > self.desired_before


def run(
    *,
    mode: Mode = "server",
    environment: str = "production",
    decision: Decision | None = None,
    ask: Ask | None = None,
    say: Callable[[str], None] = print,
    template_path: Path | None = None,
    workflows: str | None = None,
) -> DemoResult:
    """``ask`` prompts a person (None: no terminal); ``decision`` answers for them. ``template_path``:
    the seed template by default; ``workflows``: its ``Workflows`` parameter (must register the
    incident workflow)."""
    parameters = {"Environment": environment} | ({"Workflows": workflows} if workflows else {})
    with LocalCloud(mode=mode, parameters=parameters, template_path=template_path) as cloud:
        where = cloud.endpoint_url or "moto in this process"
        say(
            f"local cloud up ({where}): stack {cloud.topology.stack_name}, "
            f"ingress bus {cloud.topology.ingress_bus_name}, pipeline bus {cloud.topology.bus_name}, "
            f"{len(cloud.topology.functions)} functions, {len(cloud.topology.queues)} queues"
        )
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        before = seed.desired_count(cloud.clients)
        say(f"seeded ECS service {seed.CLUSTER}/{seed.SERVICE} (desired count {before}) and its metrics")
        event = seed.latency_event(environment=environment)
        cloud.put_events(  # on the ingress bus, as every producer does
            [{"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)}]
        )
        say(f"emitted ServiceLatencyIncreased in {environment} (p99 {event['payload']['p99_ms']:g} ms)")
        summary = _run(cloud, "demo: the incident runs")
        store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        tenant = str(event["tenant_id"])
        taken: Decision | None = None
        pending = store.pending_approvals(tenant)
        if pending:
            taken = _decide(
                cloud,
                store,
                tenant=tenant,
                approval_id=pending[0].approval_id,
                decision=decision,
                ask=ask,
                say=say,
            )
            _run(cloud, "demo: after the decision")
        runs = store.runs(tenant)
        state = runs[0] if runs else None
        entries = store.entries(tenant, state.run_id) if state else []
        after = seed.desired_count(cloud.clients)
        say("")
        say(render(entries))
        say("")
        say(
            f"run {state.run_id if state else '?'}: {state.status.value if state else 'not found'}"
            + (f" ({state.reason})" if state and state.reason else "")
        )
        say(f"ECS {seed.CLUSTER}/{seed.SERVICE} desired count: {before} -> {after}")
        return DemoResult(
            state=state,
            entries=entries,
            desired_before=before,
            desired_after=after,
            summary=summary,
            decision=taken,
        )


def _decide(
    cloud: LocalCloud,
    store: DynamoWorkflowStore,
    *,
    tenant: str,
    approval_id: str,
    decision: Decision | None,
    ask: Ask | None,
    say: Callable[[str], None],
) -> Decision | None:
    front = HttpFront(
        cloud.template,
        lambda fn, event: cloud.invoke(fn, event).response,
        LocalUser(email=OPERATOR, tenant_id=tenant),
        cloud.clock.now,
    )
    try:
        say("")
        say(f"the production scale-up waits for a person: {front.console_url(tenant)}")
        if decision is None and ask is not None:
            decision = _prompt(ask, settled=lambda: _status(store, tenant, approval_id) is not None)
            if decision is None:
                return _decided_elsewhere(store, tenant, approval_id, say)
        elif decision is None:
            decision = "approve"
            say("no terminal and no --approve/--reject: approving by itself")
        reason = "approved in the demo" if decision == "approve" else "rejected in the demo"
        url = f"{front.url}/v1/tenants/{tenant}/approvals/{approval_id}/{decision}"
        request = urllib.request.Request(
            url,
            data=json.dumps({"reason": reason}).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": front.session_token},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as refused:  # e.g. 409: decided in the console meanwhile
            answer = json.loads(refused.read() or b"{}")
        say(f"{OPERATOR}: {answer.get('answer', 'refused')} ({answer.get('reason', answer.get('message'))})")
        return _taken(_status(store, tenant, approval_id)) or decision
    finally:
        front.close()


def _run(cloud: LocalCloud, title: str) -> RunSummary:
    """Until idle, with a bar of what each stage holds (the demo's one input, done once it left them)."""
    with Progress(title, total=1, unit="input done") as progress:
        stop_watching = watch_pipeline(cloud, progress, inputs=1)
        try:
            return cloud.run_until_idle(max_invocations=500, deadline_seconds=90)
        finally:
            stop_watching()


def _status(store: DynamoWorkflowStore, tenant: str, approval_id: str) -> ApprovalStatus | None:
    """The approval's status once it is no longer PENDING, else ``None``."""
    approval = store.approval(tenant, approval_id)
    if approval is None or approval.status is ApprovalStatus.PENDING:
        return None
    return approval.status


def _taken(status: ApprovalStatus | None) -> Decision | None:
    if status is ApprovalStatus.APPROVED:
        return "approve"
    if status in (ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED):
        return "reject"
    return None


def _decided_elsewhere(
    store: DynamoWorkflowStore, tenant: str, approval_id: str, say: Callable[[str], None]
) -> Decision | None:
    approval = store.approval(tenant, approval_id)
    assert approval is not None
    who = approval.decided_by_label or approval.decided_by or "the expiry"
    say("")
    say(f"decided in the console: {approval.status.value} by {who}")
    return _taken(approval.status)


def _prompt(ask: Ask, *, settled: Callable[[], bool]) -> Decision | None:
    """The person's answer at the prompt, or ``None`` once the approval is decided elsewhere."""
    while True:
        reply = ask("approve or reject the scale-up? [a/r] ", settled)
        if reply is None:
            return None
        reply = reply.strip().lower()
        if reply in ("a", "approve"):
            return "approve"
        if reply in ("r", "reject"):
            return "reject"


def terminal_prompt() -> Ask | None:
    return _ask_terminal if sys.stdin.isatty() and sys.stdout.isatty() else None


def _ask_terminal(question: str, settled: Callable[[], bool]) -> str | None:
    """``input()`` that also stops when the approval is decided elsewhere (polled between keystrokes)."""
    sys.stdout.write(question)
    sys.stdout.flush()
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], _POLL_SECONDS)
        if ready:
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line
        if settled():
            sys.stdout.write("\n")
            return None
