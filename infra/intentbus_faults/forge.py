"""The ``forge`` fault: an attacker puts forged facts and inputs on the buses among real traffic.

After a stage invocation, with the schedule's ``forge`` rate, the attacker reads what is in flight —
the schedule's runs as their logs and states in DynamoDB show them — and puts one forged message,
built from the real envelopes it sees so it is plausible (same tenants, runs, trace and command ids;
fresh ids of its own for what it invents), chosen by a seeded RNG from the forgeries the schedule
allows (schedule.FORGERIES):

* on the pipeline bus (``EventBusName`` = the topology's bus: an attacker who got past IAM):
  a CommandAuthorized for a real pending or waiting command with its payload changed (the desired
  count 999, another cluster, another customer, ...), under its own key or an attacker's, or
  unchanged but never authorized; a CommandFailed / CommandExecuted for a command waiting for
  approval; an EventAccepted validate never recorded (a new run, or an existing one); a CommandProposed
  carrying a direct command validate never recorded, or a decide proposal with its payload changed;
  a domain event (source ``intentbus.workflow``) record never published, for an existing run (decide's
  to check);
* on the ingress (``put_events``' default bus, the producers' door): such a domain event (validate's
  to check); a pipeline fact claiming the pipeline's source (as the bus event's source, or only in the
  envelope).

Every forged message is remembered (``Forged``, with its bus event id) so the checker can say where
it ended (invariant (i)) and that no effect came of it (invariant (h)).
"""

from __future__ import annotations

import copy
import functools
import json
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intentbus import facts
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.catalog import Catalog
from intentbus.envelope import Envelope
from intentbus.extensions import RUN_ENDED
from intentbus.journal import LogEntry
from intentbus.state import WorkflowState
from intentbus_faults.invariants import INGRESS, PIPELINE_BUS, Forged
from intentbus_faults.schedule import (
    ACCEPTED_EXISTING_RUN,
    ACCEPTED_NEW_RUN,
    AUTHORIZED_ALTERED,
    AUTHORIZED_REKEYED,
    AUTHORIZED_UNRECORDED,
    DIRECT,
    DOMAIN_ON_INGRESS,
    DOMAIN_ON_PIPELINE,
    FANOUT,
    INCIDENT,
    OUTCOME_UNAUTHORIZED,
    PIPELINE_ON_INGRESS,
    PROPOSED_ALTERED,
    PROPOSED_DIRECT,
    RunRef,
    Schedule,
)
from intentbus_local.cloud import LocalCloud
from intentbus_local.lambda_runtime import Invocation

STAGE_FUNCTIONS = frozenset(
    f"{stage}Function" for stage in ("Validate", "Decide", "Authorize", "Execute", "Record")
)
DIRECT_COMMAND = "TOOL_EXECUTION_REQUESTED"
OTHER_CLUSTER = "payments"
"""A cluster no tenant of the schedules may touch."""
PRODUCERS = {INCIDENT: "monitoring.example", FANOUT: "orders.example", DIRECT: "crm.example"}
"""The source each workflow's inputs come from in the schedules (a bound producer)."""


@dataclass(frozen=True)
class SeenRun:
    """One run as the attacker reads it from DynamoDB just before forging."""

    ref: RunRef
    state: WorkflowState | None
    entries: list[LogEntry]

    def outputs(self, stages: Sequence[str], fact_type: str | None = None) -> list[Envelope]:
        return [
            output
            for entry in self.entries
            if entry.stage in stages
            for output in entry.outputs
            if fact_type is None or output.type == fact_type
        ]

    def proposals(self) -> list[tuple[Envelope, Envelope]]:
        """(CommandProposed, its command) of every proposal decide or validate recorded."""
        return [
            (proposed, Envelope.model_validate(proposed.payload["command"]))
            for proposed in self.outputs(("decide", "validate"), facts.COMMAND_PROPOSED)
        ]

    def open_commands(self) -> list[tuple[Envelope, Envelope, str]]:
        """(proposal, command, "pending" / "waiting for approval") of the commands the run still holds."""
        state = self.state
        if state is None or state.terminal:
            return []
        found = []
        for proposed, command in self.proposals():
            if command.id in state.awaiting_approval:
                found.append((proposed, command, "waiting for approval"))
            elif command.id in state.pending:
                found.append((proposed, command, "pending"))
        return found


@dataclass(frozen=True)
class _Draft:
    """A forgery before it is put: what to send, where, and what it claims."""

    envelope: Envelope
    source: str
    door: str
    target: str
    new_run: bool = False


_Builder = Callable[["Forger", list[SeenRun]], "_Draft | None"]


class Forger:
    """The attacker of one harness: ``reset`` per schedule, ``on_invocation`` as a cloud observer."""

    def __init__(self, cloud: LocalCloud, store: DynamoWorkflowStore, catalog: Catalog) -> None:
        self._cloud = cloud
        self._store = store
        self._catalog = catalog
        self._rng = random.Random(0)
        self._schedule: Schedule | None = None
        self.active = False
        self.forged: list[Forged] = []

    def reset(self, schedule: Schedule) -> None:
        self._rng = random.Random(f"{schedule.seed}|forge")
        self._schedule = schedule
        self.active = schedule.forge_rate > 0
        self.forged = []

    def on_invocation(self, invocation: Invocation) -> None:
        schedule = self._schedule
        if not self.active or schedule is None or invocation.function_logical_id not in STAGE_FUNCTIONS:
            return
        if len(self.forged) >= schedule.max_forged or self._rng.random() >= schedule.forge_rate:
            return
        self.forge_one(schedule.forgeries)

    def forge_one(self, forgeries: Sequence[str]) -> Forged | None:
        """Tries the forgeries in a random order; puts the first one what is in flight allows."""
        assert self._schedule is not None, "reset(schedule) first"
        seen = [
            SeenRun(
                ref,
                self._store.state(ref.tenant_id, ref.run_id),
                self._store.entries(ref.tenant_id, ref.run_id),
            )
            for ref in self._schedule.runs
        ]
        order = list(forgeries)
        self._rng.shuffle(order)
        for variant in order:
            draft = _BUILDERS[variant](self, seen)
            if draft is not None:
                return self._put(variant, draft)
        return None

    # ------------------------------------------------------------------ putting

    def _put(self, variant: str, draft: _Draft) -> Forged:
        detail = Envelope.model_validate(draft.envelope.to_json_dict()).to_json_dict()
        detail_type = draft.envelope.type
        entry: dict[str, Any] = {
            "Source": draft.source,
            "DetailType": detail_type,
            "Detail": json.dumps(detail),
        }
        if draft.door == PIPELINE_BUS:
            entry["EventBusName"] = self._cloud.topology.bus_name
        (bus_event_id,) = self._cloud.put_events([entry])
        forged = Forged(
            variant=variant,
            door=draft.door,
            source=draft.source,
            detail_type=detail_type,
            envelope=detail,
            bus_event_id=bus_event_id,
            tenant_id=draft.envelope.tenant_id,
            run_id=draft.envelope.run_id,
            target=draft.target,
            new_run=draft.new_run,
        )
        self.forged.append(forged)
        return forged

    # ------------------------------------------------------------------ the attacker's tools

    def fresh_id(self, prefix: str = "") -> str:
        return prefix + str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def pick(self, items: Sequence[Any]) -> Any:
        return items[self._rng.randrange(len(items))] if items else None

    def chance(self, probability: float) -> bool:
        return self._rng.random() < probability

    def altered(self, envelope: Envelope) -> tuple[Envelope, str]:
        """The envelope with its payload changed the way an attacker would, and what changed."""
        payload = copy.deepcopy(envelope.payload)
        changes: list[Callable[[dict[str, Any]], str]] = []
        if "desired_count" in payload:
            changes.append(_set(("desired_count",), 999))
        if "cluster" in payload:
            changes.append(_set(("cluster",), OTHER_CLUSTER))
        if "quantity" in payload:
            changes.append(_set(("quantity",), 999))
        if "sku" in payload:
            changes.append(_set(("sku",), "sku-z"))
        parameters = payload.get("parameters")
        if isinstance(parameters, dict) and "customer_id" in parameters:
            changes.append(_set(("parameters", "customer_id"), self.fresh_id("victim-")[:40]))
            changes.append(_set(("parameters", "status"), "churned"))
        lines = payload.get("lines")
        if isinstance(lines, list) and lines and isinstance(lines[0], dict):
            changes.append(_set(("lines", "0", "quantity"), 999))
        if "window_minutes" in payload:
            changes.append(_set(("window_minutes",), 1440))
        if not changes:
            payload["forged"] = True
            return envelope.model_copy(update={"payload": payload}), "payload: an extra field"
        apply: Callable[[dict[str, Any]], str] = self.pick(changes)
        what = apply(payload)
        return envelope.model_copy(update={"payload": payload}), what

    def resource_version(self, command: Envelope) -> int | None:
        spec = self._catalog.command(command.type)
        return 0 if spec is not None and spec.resource is not None else None


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], str]:
    def apply(target: dict[str, Any]) -> str:
        holder: Any = target
        for name in path[:-1]:
            holder = holder[int(name)] if isinstance(holder, list) else holder[name]
        before = holder.get(path[-1])
        holder[path[-1]] = value
        return f"{'.'.join(path)} {before!r} -> {value!r}"

    return apply


def _pipeline_fact(
    forger: Forger,
    base: Envelope,
    fact_type: str,
    payload: Mapping[str, Any],
    *,
    causation_id: str | None,
    version: int | None = None,
) -> Envelope:
    """A pipeline fact as a stage would publish it about ``base``, under an id of the attacker's."""
    fields = base.to_json_dict()
    fields.update(
        id=forger.fresh_id(),
        source=facts.PIPELINE_SOURCE,
        type=fact_type,
        kind="event",
        idempotency_key=None,
        causation_id=causation_id,
        version=base.version if version is None else version,
        payload=dict(payload),
    )
    return Envelope.model_validate(fields)


def _verdict(seen: SeenRun, command: Envelope) -> dict[str, Any]:
    """An ALLOW verdict like the ones the run's authorizations carry (one of them, if there is one)."""
    for output in seen.outputs(("authorize", "approval"), facts.COMMAND_AUTHORIZED):
        verdict = output.payload.get("verdict")
        if isinstance(verdict, dict) and output.payload.get("command", {}).get("type") == command.type:
            return dict(verdict)
    return {"effect": "allow", "rule": f"allow-{command.type}", "reason": "allowed by policy"}


def _open(
    forger: Forger, seen: list[SeenRun], *, waiting_first: bool = False
) -> tuple[SeenRun, Envelope, Envelope, str] | None:
    candidates = [
        (run, proposed, command, how) for run in seen for proposed, command, how in run.open_commands()
    ]
    if waiting_first:
        waiting = [c for c in candidates if c[3] == "waiting for approval"]
        candidates = waiting or candidates
    picked: tuple[SeenRun, Envelope, Envelope, str] | None = forger.pick(candidates)
    return picked


def _authorized(forger: Forger, seen: list[SeenRun], *, alter: bool, rekey: bool) -> _Draft | None:
    found = _open(forger, seen)
    if found is None:
        return None
    run, proposed, command, how = found
    what = "unchanged"
    if alter:
        command, what = forger.altered(command)
    if rekey:
        command = command.model_copy(update={"idempotency_key": forger.fresh_id("idem-")[:64]})
        what += ", its own idempotency key"
    payload = {
        "command": command.to_json_dict(),
        "verdict": _verdict(run, command),
        "resource_version": forger.resource_version(command),
    }
    version = run.state.version if run.state is not None else proposed.version
    fact = _pipeline_fact(
        forger, proposed, facts.COMMAND_AUTHORIZED, payload, causation_id=proposed.id, version=version
    )
    return _Draft(fact, facts.PIPELINE_SOURCE, PIPELINE_BUS, f"{command.type} {command.id} ({how}): {what}")


def _authorized_altered(forger: Forger, seen: list[SeenRun]) -> _Draft | None:
    return _authorized(forger, seen, alter=True, rekey=False)


def _authorized_rekeyed(forger: Forger, seen: list[SeenRun]) -> _Draft | None:
    return _authorized(forger, seen, alter=True, rekey=True)


def _authorized_unrecorded(forger: Forger, seen: list[SeenRun]) -> _Draft | None:
    return _authorized(forger, seen, alter=False, rekey=False)


def _outcome_unauthorized(forger: Forger, seen: list[SeenRun]) -> _Draft | None:
    found = _open(forger, seen, waiting_first=True)
    if found is None:
        return None
    _, proposed, command, how = found
    if forger.chance(0.5):
        fact_type = facts.COMMAND_FAILED
        payload: dict[str, Any] = {
            "command": command.to_json_dict(),
            "error": "the target refused the change",
        }
    else:
        fact_type = facts.COMMAND_EXECUTED
        payload = {"command": command.to_json_dict(), "result": {"ok": True}}
    # As if it answered a CommandAuthorized: one the attacker made up, or the proposal's id.
    cause = forger.fresh_id() if forger.chance(0.5) else proposed.id
    fact = _pipeline_fact(forger, proposed, fact_type, payload, causation_id=cause)
    return _Draft(
        fact, facts.PIPELINE_SOURCE, PIPELINE_BUS, f"{fact_type} for {command.type} {command.id} ({how})"
    )


def _accepted(forger: Forger, seen: list[SeenRun], *, new_run: bool) -> _Draft | None:
    candidates = [
        (run, accepted, Envelope.model_validate(accepted.payload["event"]))
        for run in seen
        for accepted in run.outputs(("validate",), facts.EVENT_ACCEPTED)
    ]
    if not new_run:
        candidates = [c for c in candidates if c[0].state is not None]
    found = forger.pick(candidates)
    if found is None:
        return None
    run, _, event = found
    event_id = forger.fresh_id("evt-")
    changes: dict[str, Any] = {"id": event_id}
    target = f"{event.type} {event_id} for {run.ref.tenant_id}/{run.ref.run_id}"
    if new_run:
        run_id = forger.fresh_id("run-forged-")[:40]
        changes.update(run_id=run_id, correlation_id=run_id, trace_id=forger.fresh_id("tr_"))
        target = f"{event.type} {event_id} starting {run.ref.tenant_id}/{run_id}"
    event = event.model_copy(update=changes)
    if forger.chance(0.5):
        event, what = forger.altered(event)
        target += f" ({what})"
    fact = _pipeline_fact(
        forger, event, facts.EVENT_ACCEPTED, {"event": event.to_json_dict()}, causation_id=event.id
    )
    return _Draft(fact, facts.PIPELINE_SOURCE, PIPELINE_BUS, target, new_run=new_run)


def _accepted_new_run(forger: Forger, seen: list[SeenRun]) -> _Draft | None:
    return _accepted(forger, seen, new_run=True)


def _accepted_existing_run(forger: Forger, seen: list[SeenRun]) -> _Draft | None:
    return _accepted(forger, seen, new_run=False)


def _proposed_direct(forger: Forger, seen: list[SeenRun]) -> _Draft | None:
    """A direct command validate never recorded: a real direct one re-issued, else any real command
    turned into one (same tenant, run and trace)."""
    commands = [(run, command) for run in seen for _, command in run.proposals()]
    direct = [(run, command) for run, command in commands if command.type == DIRECT_COMMAND]
    found = forger.pick(direct or commands)
    if found is None:
        return None
    run, command = found
    customer = forger.fresh_id("victim-")[:40]
    new_run = run.state is None or run.state.terminal or forger.chance(0.5)
    run_id = forger.fresh_id("run-forged-")[:40] if new_run else command.run_id
    forged_command = command.model_copy(
        update={
            "id": forger.fresh_id(),
            "type": DIRECT_COMMAND,
            "source": command.source if command.type == DIRECT_COMMAND else "crm.example",
            "run_id": run_id,
            "correlation_id": run_id,
            "idempotency_key": forger.fresh_id("idem-")[:64],
            "payload": {
                "tool_name": "crm_record_upsert",
                "parameters": {"customer_id": customer, "status": "churned"},
            },
        }
    )
    payload = {"command": forged_command.to_json_dict(), "decision_id": forged_command.id, "agent": None}
    fact = _pipeline_fact(
        forger, forged_command, facts.COMMAND_PROPOSED, payload, causation_id=forged_command.id
    )
    where = "a new run" if new_run else "its run"
    return _Draft(
        fact,
        facts.PIPELINE_SOURCE,
        PIPELINE_BUS,
        f"{DIRECT_COMMAND} {forged_command.id} upserting {customer} in {where}",
        new_run=new_run,
    )


def _proposed_altered(forger: Forger, seen: list[SeenRun]) -> _Draft | None:
    candidates = [
        (run, proposed, command, how)
        for run in seen
        for proposed, command, how in run.open_commands()
        if how == "pending" and proposed.payload.get("agent") is not None
    ]
    found = forger.pick(candidates)
    if found is None:
        return None
    _, proposed, command, how = found
    command, what = forger.altered(command)
    payload = {**proposed.payload, "command": command.to_json_dict()}
    fact = _pipeline_fact(
        forger, proposed, facts.COMMAND_PROPOSED, payload, causation_id=proposed.causation_id
    )
    return _Draft(fact, facts.PIPELINE_SOURCE, PIPELINE_BUS, f"{command.type} {command.id} ({how}): {what}")


def _domain_event(forger: Forger, seen: list[SeenRun], door: str) -> _Draft | None:
    """A domain event for an existing run: one record published, re-issued; else a run's input event
    passed off as a workflow's."""
    live = [run for run in seen if run.state is not None]
    published = [
        (run, event)
        for run in live
        for event in run.outputs(("record",))
        if event.source == facts.WORKFLOW_SOURCE
    ]
    inputs = [
        (run, Envelope.model_validate(accepted.payload["event"]))
        for run in live
        for accepted in run.outputs(("validate",), facts.EVENT_ACCEPTED)
    ]
    found = forger.pick(published or inputs)
    if found is None:
        return None
    run, event = found
    # Unmarked as a run's last (RUN_ENDED), so that the bus delivers it to decide as any other outcome.
    extensions = {name: value for name, value in event.extensions.items() if name != RUN_ENDED}
    event = event.model_copy(
        update={"id": forger.fresh_id("evt-"), "source": facts.WORKFLOW_SOURCE, "extensions": extensions}
    )
    what = "re-issued"
    if forger.chance(0.5):
        event, what = forger.altered(event)
    return _Draft(
        event,
        facts.WORKFLOW_SOURCE,
        door,
        f"{event.type} {event.id} for {run.ref.tenant_id}/{run.ref.run_id}: {what}",
    )


def _pipeline_on_ingress(forger: Forger, seen: list[SeenRun]) -> _Draft | None:
    """A pipeline fact sent through the producers' door: the bus event claims the pipeline's source,
    or a producer's source with the envelope claiming the pipeline's."""
    candidates = [
        (run, output)
        for run in seen
        for output in run.outputs(("validate", "decide", "authorize", "approval", "record"))
        if output.source == facts.PIPELINE_SOURCE
    ]
    found = forger.pick(candidates)
    if found is None:
        return None
    run, fact = found
    fact = fact.model_copy(update={"id": forger.fresh_id()})
    inner = fact.payload.get("command") or fact.payload.get("event")
    what = "re-issued"
    if isinstance(inner, dict) and forger.chance(0.7):
        altered, what = forger.altered(Envelope.model_validate(inner))
        key = "command" if "command" in fact.payload else "event"
        fact = fact.model_copy(update={"payload": {**fact.payload, key: altered.to_json_dict()}})
    source = facts.PIPELINE_SOURCE if forger.chance(0.6) else PRODUCERS.get(run.ref.workflow, "tests.example")
    return _Draft(
        fact,
        source,
        INGRESS,
        f"{fact.type} {fact.id} for {run.ref.tenant_id}/{run.ref.run_id} from {source}: {what}",
    )


_BUILDERS: dict[str, _Builder] = {
    AUTHORIZED_ALTERED: _authorized_altered,
    AUTHORIZED_REKEYED: _authorized_rekeyed,
    AUTHORIZED_UNRECORDED: _authorized_unrecorded,
    OUTCOME_UNAUTHORIZED: _outcome_unauthorized,
    ACCEPTED_NEW_RUN: _accepted_new_run,
    ACCEPTED_EXISTING_RUN: _accepted_existing_run,
    PROPOSED_DIRECT: _proposed_direct,
    PROPOSED_ALTERED: _proposed_altered,
    DOMAIN_ON_INGRESS: functools.partial(_domain_event, door=INGRESS),
    DOMAIN_ON_PIPELINE: functools.partial(_domain_event, door=PIPELINE_BUS),
    PIPELINE_ON_INGRESS: _pipeline_on_ingress,
}
