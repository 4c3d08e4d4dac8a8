"""The invariants, checked over what a schedule left behind ("nothing lost, nothing done twice,
nothing stale applied"). Each check takes an ``Observation`` and returns violations, as strings.

(a) ``effects_at_most_once``: every side effect at most once per idempotency key, exactly once for
    each command of a run that COMPLETED whose tool declares ``effect=ToolEffect.WRITES`` (the
    default), none for a tool declared ``ToolEffect.READ_ONLY`` (``declared_effects``). Effects are
    the AWS writes the execute function made that reached the service (not the pipeline's own
    tables, bus or queues), attributed to the Powertools idempotency record in progress; plus the
    fan-out workflow's durable journal (``applied``). A tool declared ``RepeatSafety.SAFE`` may
    repeat its effect after an attempt that died (README: "safe to repeat"): ``safe_repeats`` lists
    those as notes, not violations.
(b) ``inputs_end_in_one_bucket``: every input event in exactly one bucket of
    ``intentbus_local.report.build``, none "lost"; as many outcomes as inputs sent.
(c) ``no_stale_transitions``: in each run's log, the state-changing entries' versions are 1, 2, …, n
    in time order, none claimed twice, n is the state's version; an authorization claims the version
    current when it was written; every idempotency record is an authorized command's, and none made an
    effect after its run ended.
(d) ``nothing_stuck``: every run that is not terminal has a durable reason: a pending approval item
    (gsi1 ``T#<tenant>#APPROVALS#PENDING``), a budget pause in its log, a message in flight, or a
    DLQ message that names it.
(e) ``republished_identically``: every PutEvents entry a stage ever sent with a given envelope id has
    the same Detail, ids and times included.
(f) ``approvals_decided_once``: in approval schedules, each approval the person acted on ends decided
    once: its final status agrees with every successful answer the API gave (none if it expired), an
    approval is never applied at or after its expiry, exactly one CommandAuthorized id exists for an
    approved command and none otherwise, and a rejected or expired one leaves its run DENIED.
(g) ``model_asked_once``: every recorded decision cost one model call per decide sandbox that asked,
    and none came after the record (a redelivery reuses the recorded decision, a warm retry the one its
    sandbox kept). Only a sandbox lost (a crash or a timeout, then a cold start) before the record may
    leave another to ask again: nothing was decided that survived it.
(h) ``no_effect_without_authorization``: every effect execute made is of a command whose authorization
    the pipeline recorded (an authorize entry APPLIED, or an approval entry APPLIED, naming its command
    id and carrying its CommandAuthorized), and what the effect wrote is that recorded command's payload
    (the desired count, cluster and service scaled; the CRM record and status; the journal item and
    quantity reserved).
(i) ``forged_messages_refused``: every message the attacker forged (the ``forge`` fault, forge.py) ended
    quarantined, or as a duplicate or stale where it cannot be told from a legitimate late one: never
    applied, never in a DLQ, never lost; no log entry records it as applied (it changed no run), no
    stage published anything in answer to it, and no run it invented exists. Forged messages are not
    producer inputs: (b) counts only what the producers sent.
(j) ``retries_kept_their_schedule``: no delivery after a failed one came before the failure's backoff
    (or the queue's visibility timeout) made it visible, and no backoff was below its retry policies'
    floor (retry_schedule.py).

Every violation starts with a stable code in parentheses, ``(c/executed-after-end) ...``; see ``code_of``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from intentbus import facts
from intentbus.adapters.idempotency import KEY_PREFIX
from intentbus.approval_record import Approval
from intentbus.catalog import Catalog
from intentbus.definition import RepeatSafety, RetryPolicy, ToolEffect
from intentbus.ids import canonical_json
from intentbus.journal import ApprovalStatus, LogEntry, Outcome
from intentbus.state import Status, WorkflowState
from intentbus_faults import fanout_workflow
from intentbus_faults.approver import Decided
from intentbus_faults.retry_schedule import retries_keep_their_schedule
from intentbus_faults.schedule import RunRef
from intentbus_local.poller import Delivered
from intentbus_local.report import RunReport


def declared_effects(catalog: Catalog) -> dict[str, ToolEffect]:
    """Command type -> what its tool declares it does (``tool(effect=...)``), over the catalog's
    workflows: what must take effect exactly once in a completed run, and what must write nothing."""
    return {
        name: spec.tool.effect
        for workflow in catalog.workflows.values()
        for name, spec in workflow.commands.items()
    }


LOST = "lost"


def idempotency_record_id(tenant_id: str, idempotency_key: str) -> str:
    """The ``id`` Powertools gives a command's record: key prefix + md5 of the JSON of its event key,
    ``[tenant_id, idempotency_key]`` (the execute adapter's ``event_key_jmespath``: keys are per tenant)."""
    key = json.dumps([tenant_id, idempotency_key], sort_keys=True)
    digest = hashlib.md5(key.encode(), usedforsecurity=False)
    return f"{KEY_PREFIX}#{digest.hexdigest()}"


def command_record_id(command: Mapping[str, Any]) -> str | None:
    """The idempotency record id of a command envelope (as JSON), if it has a key."""
    key = command.get("idempotency_key")
    return idempotency_record_id(str(command.get("tenant_id")), key) if isinstance(key, str) else None


@dataclass(frozen=True)
class Effect:
    """A write the execute function made that reached the service."""

    seq: int
    record: str | None
    """The idempotency record in progress when it was made."""
    what: str
    """e.g. ``ecs.UpdateService``."""
    params: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """The call's parameters: what it wrote."""

    def __str__(self) -> str:
        return f"{self.what}@{self.seq}"


PIPELINE_BUS, INGRESS = "pipeline bus", "ingress"
"""The doors a forged message is put through: the pipeline's bus (an attacker past IAM) or the producers'."""


@dataclass(frozen=True)
class Forged:
    """One message the attacker put (the ``forge`` fault)."""

    variant: str
    """Which forgery (schedule.FORGERIES)."""
    door: str
    source: str
    detail_type: str
    envelope: Mapping[str, Any]
    """The Detail put."""
    bus_event_id: str
    tenant_id: str
    run_id: str
    target: str
    """What it claims, for people: e.g. ``scale_service c-1 (pending): desired_count 2 -> 999``."""
    new_run: bool = False
    """It names a run that does not exist (and must never exist)."""

    @property
    def id(self) -> str:
        return str(self.envelope.get("id"))

    def __str__(self) -> str:
        return (
            f"forged {self.variant} ({self.detail_type} {self.id} from {self.source} on the {self.door}, "
            f"{self.tenant_id}/{self.run_id}: {self.target})"
        )


@dataclass(frozen=True)
class Landing:
    """How a stage's handler ended one delivery of a message (its StageResult)."""

    stage: str
    outcome: str
    reason: str | None
    forged: bool
    """The stage called it forged (``NotRecorded``: counted in the ForgedFacts metric)."""


@dataclass
class RunView:
    ref: RunRef
    state: WorkflowState | None
    entries: list[LogEntry]
    pending_approvals: list[str] = field(default_factory=list)
    dead_letters: list[str] = field(default_factory=list)
    """Where DLQ messages name this run."""
    in_flight: int = 0

    def authorized(self) -> list[dict[str, Any]]:
        """The commands authorize let run (their envelopes, from its CommandAuthorized outputs)."""
        return [
            dict(output.payload["command"])
            for entry in self.entries
            if entry.stage in ("authorize", "approval")
            for output in entry.outputs
            if output.type == facts.COMMAND_AUTHORIZED
        ]

    def proposed(self) -> list[dict[str, Any]]:
        return [
            dict(output.payload["command"])
            for entry in self.entries
            if entry.stage in ("decide", "validate")
            for output in entry.outputs
            if output.type == facts.COMMAND_PROPOSED
        ]


class Asked(NamedTuple):
    """One model call for a decision: its call sequence number, and which decide sandbox made it
    (1 = the function's first cold start, 2 = the next, ...)."""

    seq: int
    sandbox: int


@dataclass
class Observation:
    seed: int
    runs: list[RunView]
    report: RunReport
    sent: int
    effects: list[Effect] = field(default_factory=list)
    published: dict[str, list[str]] = field(default_factory=dict)
    """Envelope id -> the canonical Detail of every PutEvents entry sent with it, in order."""
    idempotency: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Idempotency record id -> its item (status, data), for every record execute took."""
    taken_at: dict[str, int] = field(default_factory=dict)
    """Idempotency record id -> the call sequence number of its first in-progress put."""
    ended_at: dict[tuple[str, str], int] = field(default_factory=dict)
    """(tenant, run) -> the call sequence number of the write that made the run terminal."""
    journal: dict[str, int] = field(default_factory=dict)
    """Fan-out journal key -> ``applied`` (0 if the item does not exist)."""
    journal_keys: dict[str, str] = field(default_factory=dict)
    """Idempotency record id -> the fan-out journal key its command writes."""
    repeat_safety: dict[str, RepeatSafety] = field(default_factory=dict)
    """Command type -> what its tool declares."""
    declared: dict[str, ToolEffect] = field(default_factory=dict)
    """Command type -> whether its tool writes (``declared_effects``); a type not listed is taken to."""
    decisions: dict[RunRef, Decided] = field(default_factory=dict)
    """What the approval schedules' person did, per run."""
    approvals: dict[str, Approval] = field(default_factory=dict)
    """Approval id -> the approval item as it ended."""
    model_calls: dict[tuple[str, str, str], list[Asked]] = field(default_factory=dict)
    """(tenant, run, event type) -> each time an agent was asked to decide it, in call order."""
    decided_at: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """(tenant, run, event type) -> the call sequence number of the write that recorded its decision."""
    forged: list[Forged] = field(default_factory=list)
    """What the attacker put, in order (none unless the schedule forges)."""
    forged_runs: list[RunView] = field(default_factory=list)
    """The runs forged messages invented (``Forged.new_run``), as they ended: they must not exist."""
    landings: dict[str, list[Landing]] = field(default_factory=dict)
    """Bus event id -> how each delivery of it ended, in order (every message a stage handled)."""
    quarantined: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Bus event id -> (stage, reason) of each quarantine record of it."""
    dead_lettered: dict[str, list[str]] = field(default_factory=dict)
    """Bus event id -> the DLQs that hold it."""
    deliveries: list[Delivered] = field(default_factory=list)
    """Every delivery the local poller made, in order (``Poller.history``)."""
    retry_policies: list[RetryPolicy] = field(default_factory=list)
    """The retry policies of the workflows' commands."""


Invariant = Callable[[Observation], list[str]]


def _commands_by_record(obs: Observation) -> dict[str, tuple[RunView, dict[str, Any]]]:
    found: dict[str, tuple[RunView, dict[str, Any]]] = {}
    for run in obs.runs:
        for command in run.authorized():
            record = command_record_id(command)
            if record is not None:
                found[record] = (run, command)
    return found


def _effects_by_record(obs: Observation) -> dict[str | None, list[Effect]]:
    by_record: dict[str | None, list[Effect]] = defaultdict(list)
    for effect in obs.effects:
        by_record[effect.record].append(effect)
    return by_record


def _repeats(
    obs: Observation, safety: RepeatSafety
) -> list[tuple[RunView | None, dict[str, Any], list[Effect]]]:
    commands = _commands_by_record(obs)
    found = []
    for record, effects in _effects_by_record(obs).items():
        if record is None or len(effects) < 2:
            continue
        run, command = commands.get(record, (None, {}))
        declared = obs.repeat_safety.get(str(command.get("type")), RepeatSafety.RECONCILE)
        if declared is safety:
            found.append((run, command, effects))
    return found


def _repeat_text(run: RunView | None, command: Mapping[str, Any], effects: Sequence[Effect]) -> str:
    return (
        f"{command.get('type', '?')} of {run.ref if run else '?'} "
        f"(key {command.get('idempotency_key', '?')}) took effect {len(effects)} times: "
        + ", ".join(str(e) for e in effects)
    )


def safe_repeats(obs: Observation) -> list[str]:
    """Notes, not violations: SAFE tools that repeated their effect (allowed by their declaration)."""
    return [f"(a/safe-repeat) {_repeat_text(*repeat)}" for repeat in _repeats(obs, RepeatSafety.SAFE)]


def effects_at_most_once(obs: Observation) -> list[str]:
    violations: list[str] = []
    by_record = _effects_by_record(obs)
    if None in by_record:
        violations.append(
            "(a/effect-outside-record) effect(s) outside any idempotency record: "
            + ", ".join(str(e) for e in by_record[None])
        )
    violations += [
        f"(a/effect-repeated) {_repeat_text(*repeat)}" for repeat in _repeats(obs, RepeatSafety.RECONCILE)
    ]
    commands = _commands_by_record(obs)
    for record, effects in by_record.items():
        run_command = commands.get(record) if record is not None else None
        if run_command is None:
            continue
        run, command = run_command
        if obs.declared.get(str(command.get("type"))) is ToolEffect.READ_ONLY:
            violations.append(
                f"(a/read-only-wrote) {command.get('type')} of {run.ref} is declared read-only "
                "(tool(effect=ToolEffect.READ_ONLY)) but wrote: " + ", ".join(str(e) for e in effects)
            )
    for journal_key, applied in obs.journal.items():
        if applied > 1:
            violations.append(
                f"(a/journal-repeated) journal {journal_key}: the effect was applied {applied} times"
            )
    for record, (run, command) in commands.items():
        if run.state is None or run.state.status is not Status.COMPLETED:
            continue
        if obs.declared.get(str(command["type"]), ToolEffect.WRITES) is not ToolEffect.WRITES:
            continue
        made = len(by_record.get(record, []))
        safe = obs.repeat_safety.get(str(command["type"])) is RepeatSafety.SAFE
        if made == 0 or (made > 1 and not safe):
            violations.append(
                f"(a/completed-not-once) {run.ref} COMPLETED but its {command['type']} took effect "
                f"{made} times (exactly once expected"
                + ("; a tool that writes nothing declares effect=ToolEffect.READ_ONLY)" if not made else ")")
            )
        written = obs.journal_keys.get(record)
        applied = obs.journal.get(written, 0) if written is not None else 1
        if applied != 1:
            violations.append(
                f"(a/completed-not-once) {run.ref} COMPLETED but journal {written} shows {applied} "
                "applications (exactly once expected)"
            )
    return violations


def inputs_end_in_one_bucket(obs: Observation) -> list[str]:
    violations: list[str] = []
    if len(obs.report.inputs) != obs.sent:
        violations.append(
            f"(b/inputs-unaccounted) {obs.sent} inputs sent, {len(obs.report.inputs)} accounted for"
        )
    for item in obs.report.inputs:
        if item.bucket == LOST:
            violations.append(
                f"(b/input-lost) input {item.line} ({item.type} {item.event_id}, run {item.run_id}) "
                f"is lost: {item.reason}"
            )
    return violations


KNOWN_STAGES = frozenset({"validate", "decide", "authorize", "execute", "record"})


def transitions(entries: Sequence[LogEntry]) -> list[LogEntry]:
    """The entries whose commit changed the run's state (and so its version), in the given order.

    Stages this checker does not know count when they claim one more than the version before them.
    """
    from_decide = {output.id for entry in entries if entry.stage == "decide" for output in entry.outputs}
    changed: list[LogEntry] = []
    current = 0
    for entry in entries:
        if entry.stage == "decide":
            moved = entry.outcome is Outcome.PAUSED or (
                entry.outcome is Outcome.APPLIED and "decision" in entry.summary
            )
        elif entry.stage == "authorize":
            creates = entry.input_id not in from_decide and entry.outcome in (Outcome.APPLIED, Outcome.DENIED)
            moved = entry.outcome is Outcome.WAITING or creates
        elif entry.stage == "record":
            moved = entry.outcome in (Outcome.APPLIED, Outcome.DENIED, Outcome.PAUSED)
        elif entry.stage == "approval":
            # A decision, or an expiry that found the run still waiting, moves it; a late expiry does not.
            moved = entry.version == current + 1
        elif entry.stage == "approval-attempt":
            moved = False  # a refused attempt records the version its approval was proposed at
        elif entry.stage not in KNOWN_STAGES:
            moved = entry.outcome is not Outcome.STALE and entry.version == current + 1
        else:
            moved = False
        if moved:
            changed.append(entry)
            current = entry.version
    return changed


def _describe(entry: LogEntry) -> str:
    when = entry.at.isoformat()
    return f"{entry.stage}/{entry.outcome.value} on {entry.input_type} v{entry.version} at {when}"


def no_stale_transitions(obs: Observation) -> list[str]:
    violations: list[str] = []
    for run in obs.runs:
        ordered = sorted(run.entries, key=lambda e: e.at)
        changed = transitions(ordered)
        versions = [entry.version for entry in changed]
        if versions != list(range(1, len(versions) + 1)):
            claimed = Counter(versions)
            twice = sorted(v for v, n in claimed.items() if n > 1)
            violations.append(
                f"(c/versions-not-sequential) {run.ref}: state-changing versions in time order are "
                f"{versions}, not 1..{len(versions)}"
                + (f"; version(s) {twice} claimed twice" if twice else "")
                + ": "
                + "; ".join(_describe(e) for e in changed)
            )
        final = run.state.version if run.state is not None else 0
        if changed and final != versions[-1]:
            violations.append(
                f"(c/state-version-mismatch) {run.ref}: the state is at v{final}, "
                f"its last transition claims v{versions[-1]}"
            )
        if run.state is not None and not changed:
            violations.append(
                f"(c/state-without-transition) {run.ref}: the state exists (v{final}) "
                "but no log entry changed it"
            )
        changed_ids = {id(entry) for entry in changed}
        current = 0
        for entry in ordered:
            if id(entry) in changed_ids:
                current = entry.version
                continue
            checked = entry.stage == "authorize" and entry.outcome in (Outcome.APPLIED, Outcome.DENIED)
            unknown = (
                entry.stage not in KNOWN_STAGES
                and entry.stage != "approval-attempt"
                and entry.outcome is not Outcome.STALE
            )
            if (checked or unknown) and entry.version != current:
                violations.append(
                    f"(c/claims-stale-version) {run.ref}: {_describe(entry)} claims v{entry.version}; "
                    f"the run was at v{current}"
                )
    commands = _commands_by_record(obs)
    effects = _effects_by_record(obs)
    for record, item in obs.idempotency.items():
        owner = commands.get(record)
        if owner is None and not item and not effects.get(record):
            continue  # taken and released (the guard refused the command): nothing stored, nothing done
        if owner is None:
            violations.append(
                f"(c/unauthorized-execution) idempotency record {record} ({item.get('status')}) "
                "is no authorized command's"
            )
            continue
        run, command = owner
        ended = obs.ended_at.get((run.ref.tenant_id, run.ref.run_id))
        after_end = [effect for effect in effects.get(record, []) if ended is not None and effect.seq > ended]
        if after_end:
            taken = after_end[0].seq
            status = run.state.status.value if run.state else "?"
            violations.append(
                f"(c/executed-after-end) {run.ref}: {command['type']} {command['id']} was executed "
                f"(call {taken}) after the run had ended (call {ended}, now {status}): "
                "a stale authorization applied"
            )
    return violations


def nothing_stuck(obs: Observation) -> list[str]:
    violations: list[str] = []
    for run in obs.runs:
        if run.state is not None and run.state.terminal:
            continue
        if run.pending_approvals or run.dead_letters or run.in_flight:
            continue
        paused = run.state is not None and run.state.status is Status.PAUSED
        if paused and any(e.outcome is Outcome.PAUSED for e in run.entries):
            continue  # waiting for a person's review, with the reason in the log
        status = "never started" if run.state is None else f"{run.state.status.value} at v{run.state.version}"
        last = max(run.entries, key=lambda e: e.at, default=None)
        violations.append(
            f"(d/run-stuck) {run.ref} is stuck ({status}) with no pending approval, review, "
            "message in flight or dead letter" + (f"; its last entry: {_describe(last)}" if last else "")
        )
    return violations


def republished_identically(obs: Observation) -> list[str]:
    violations: list[str] = []
    for envelope_id, contents in obs.published.items():
        distinct = list(dict.fromkeys(contents))
        if len(distinct) > 1:
            violations.append(
                f"(e/republished-different) envelope {envelope_id} was published with {len(distinct)} "
                f"different contents ({len(contents)} entries): {_difference(distinct[0], distinct[1])}"
            )
    return violations


def _difference(first: str, second: str) -> str:
    a, b = json.loads(first), json.loads(second)
    changed = sorted(_diff_paths(a, b))
    detail = json.loads(first)
    return f"{detail.get('type')} of run {detail.get('run_id')}, differing at {', '.join(changed[:6]) or '?'}"


def _diff_paths(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        found: list[str] = []
        for key in sorted(set(a) | set(b)):
            found.extend(_diff_paths(a.get(key), b.get(key), f"{path}.{key}" if path else str(key)))
        return found
    return [] if canonical_json(a) == canonical_json(b) else [path or "<root>"]


_CODE = re.compile(r"^\((?P<code>[a-i]/[a-z\-]+|settle)\)")


def _authorized_ids(obs: Observation, command_id: str) -> set[str]:
    found: set[str] = set()
    for envelope_id, details in obs.published.items():
        detail = json.loads(details[0])
        payload = detail.get("payload") or {}
        command = payload.get("command") if isinstance(payload, dict) else None
        if (
            detail.get("type") == facts.COMMAND_AUTHORIZED
            and isinstance(command, dict)
            and command.get("id") == command_id
        ):
            found.add(envelope_id)
    return found


def approvals_decided_once(obs: Observation) -> list[str]:
    violations: list[str] = []
    runs = {run.ref: run for run in obs.runs}
    for ref, decided in obs.decisions.items():
        approval = obs.approvals.get(decided.approval_id)
        if approval is None:
            violations.append(f"(f/approval-missing) {ref}: approval {decided.approval_id} is gone")
            continue
        status = approval.status.value.lower()
        answered = [a for a in decided.attempts if a.status == 200]
        wrong = [a for a in answered if a.answer != status]
        if wrong or (approval.status is ApprovalStatus.PENDING and answered):
            violations.append(
                f"(f/answer-mismatch) {ref}: the approval ended {approval.status.value} but the API answered "
                + ", ".join(f"{a.decision}: {a.status} {a.answer}" for a in decided.attempts)
            )
        if (
            approval.status is ApprovalStatus.APPROVED
            and approval.decided_at is not None
            and approval.decided_at >= approval.expires_at
        ):
            violations.append(
                f"(f/approved-after-expiry) {ref}: approved at {approval.decided_at.isoformat()}, "
                f"it expired at {approval.expires_at.isoformat()}"
            )
        authorized = _authorized_ids(obs, approval.command.id)
        wanted = 1 if approval.status is ApprovalStatus.APPROVED else 0
        if len(authorized) != wanted:
            violations.append(
                f"(f/authorized-count) {ref}: {len(authorized)} CommandAuthorized id(s) for "
                f"{approval.command.type} {approval.command.id}, whose approval is {approval.status.value}"
            )
        run = runs.get(ref)
        if (
            approval.status in (ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED)
            and run is not None
            and (run.state is None or run.state.status is not Status.DENIED)
        ):
            now = "no state" if run.state is None else run.state.status.value
            violations.append(
                f"(f/run-not-denied) {ref}: the approval is {approval.status.value}, the run {now}"
            )
    return violations


def code_of(violation: str) -> str:
    """A violation's stable code, e.g. ``c/executed-after-end``."""
    found = _CODE.match(violation)
    return found.group("code") if found else "?"


def model_asked_once(obs: Observation) -> list[str]:
    violations: list[str] = []
    for key, recorded in obs.decided_at.items():
        calls = obs.model_calls.get(key, [])
        askers = [asked.sandbox for asked in calls]
        after = [asked.seq for asked in calls if asked.seq > recorded]
        asked_again = len(askers) - len(set(askers))
        if not calls or after or asked_again:
            tenant, run, event_type = key
            violations.append(
                f"(g/model-calls) {tenant}/{run} {event_type}: the model was asked {len(calls)} time(s) "
                f"by {len(set(askers))} sandbox(es) for one decision (recorded at call {recorded}; "
                f"{len(after)} ask(s) after it)"
            )
    return violations


def _recorded_authorizations(obs: Observation) -> dict[str, list[dict[str, Any]]]:
    """Idempotency record id -> the commands whose authorization the pipeline recorded with that key:
    an ``authorize`` entry APPLIED (the verdict allowed it) or an ``approval`` entry APPLIED (a person
    approved it), whose summary names the command and whose CommandAuthorized carries it."""
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in [*obs.runs, *obs.forged_runs]:
        for entry in run.entries:
            if entry.stage not in ("authorize", "approval") or entry.outcome is not Outcome.APPLIED:
                continue
            for output in entry.outputs:
                command = output.payload.get("command")
                if output.type != facts.COMMAND_AUTHORIZED or not isinstance(command, dict):
                    continue
                record = command_record_id(command)
                if record is not None and command.get("id") == entry.summary.get("command_id"):
                    found[record].append(dict(command))
    return found


def _key_values(params: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB write's key (UpdateItem's ``Key``, PutItem's ``Item``) as plain values."""
    item = params.get("Key") or params.get("Item") or {}
    return {name: next(iter(value.values()), None) for name, value in item.items() if isinstance(value, dict)}


def _value(params: Mapping[str, Any], name: str) -> Any:
    value = params.get("ExpressionAttributeValues", {}).get(name)
    return next(iter(value.values()), None) if isinstance(value, dict) else None


_MODELLED = frozenset(
    {"scale_service", "TOOL_EXECUTION_REQUESTED", fanout_workflow.COMMAND, fanout_workflow.UNCHECKED}
)
"""The seed workflows' command types whose writes the checker compares with the recorded payload."""


def effect_mismatch(effect: Effect, command: Mapping[str, Any]) -> str | None:
    """How what the effect wrote differs from the command's recorded payload (None if it does not).

    Effects of a shape or a command type this checker has no model of (a user's own tools) are
    attributed, not compared."""
    kind = str(command.get("type"))
    payload = command.get("payload") or {}
    tenant_id = command.get("tenant_id")
    wanted: dict[str, Any]
    got: dict[str, Any]
    if kind not in _MODELLED:
        return None
    if effect.what == "ecs.UpdateService":
        if kind != "scale_service":
            return f"{kind} does not scale a service"
        wanted = {
            "cluster": payload.get("cluster"),
            "service": payload.get("service"),
            "desiredCount": payload.get("desired_count"),
        }
        got = {name: effect.params.get(name) for name in wanted}
    elif effect.what in ("dynamodb.UpdateItem", "dynamodb.PutItem"):
        key = _key_values(effect.params)
        if kind == "TOOL_EXECUTION_REQUESTED":
            parameters = payload.get("parameters") or {}
            wanted = {"customer_id": parameters.get("customer_id"), ":status": parameters.get("status")}
            got = {"customer_id": key.get("customer_id"), ":status": _value(effect.params, ":status")}
        elif kind in (fanout_workflow.COMMAND, fanout_workflow.UNCHECKED):
            journal = fanout_workflow.journal_key(
                str(tenant_id), str(command.get("run_id")), str(payload.get("sku"))
            )
            wanted = {"customer_id": journal, ":quantity": payload.get("quantity")}
            got = {"customer_id": key.get("customer_id"), ":quantity": _value(effect.params, ":quantity")}
        else:
            return f"{kind} does not write to DynamoDB"
        if "tenant_id" in key:
            wanted["tenant_id"], got["tenant_id"] = tenant_id, key["tenant_id"]
    else:
        return None
    differs = [name for name in wanted if str(wanted[name]) != str(got[name])]
    return ", ".join(f"{name} {got[name]!r} (recorded {wanted[name]!r})" for name in differs) or None


def no_effect_without_authorization(obs: Observation) -> list[str]:
    violations: list[str] = []
    granted = _recorded_authorizations(obs)
    for effect in obs.effects:
        commands = granted.get(effect.record) if effect.record is not None else None
        if not commands:
            where = "outside any idempotency record" if effect.record is None else f"record {effect.record}"
            violations.append(
                f"(h/effect-without-authorization) {effect} ({where}): no authorize or approval entry "
                "recorded an authorization of its command"
            )
            continue
        mismatches = [effect_mismatch(effect, command) for command in commands]
        if all(mismatch is not None for mismatch in mismatches):
            command = commands[0]
            violations.append(
                f"(h/effect-not-as-authorized) {effect} for {command.get('type')} {command.get('id')} of "
                f"{command.get('tenant_id')}/{command.get('run_id')} wrote {mismatches[0]}"
            )
    return violations


_REFUSED = frozenset({Outcome.QUARANTINED.value, Outcome.DUPLICATE.value, Outcome.STALE.value})
"""How a forged message may end: refused, or (where it is indistinguishable from one) a late duplicate."""
_UNCHANGED = frozenset({Outcome.STALE, Outcome.DUPLICATE})


def forged_end(obs: Observation, forged: Forged) -> str:
    """Where one forged message ended, for the tally: ``quarantined by execute``, ``duplicate at
    execute``, ``in ExecuteDLQ``, ``lost``, ... (several, joined, if it was delivered more than once)."""
    ends: list[str] = [f"in {dlq}" for dlq in obs.dead_lettered.get(forged.bus_event_id, [])]
    ends += [f"quarantined by {stage}" for stage, _ in obs.quarantined.get(forged.bus_event_id, [])]
    ends += [
        f"{landing.outcome} at {landing.stage}"
        for landing in obs.landings.get(forged.bus_event_id, [])
        if landing.outcome != Outcome.QUARANTINED.value
    ]
    return " + ".join(sorted(set(ends))) or LOST


def forged_messages_refused(obs: Observation) -> list[str]:
    violations: list[str] = []
    by_id = {forged.id: forged for forged in obs.forged}
    for forged in obs.forged:
        landings = obs.landings.get(forged.bus_event_id, [])
        for landing in landings:
            if landing.outcome not in _REFUSED:
                violations.append(
                    f"(i/forged-applied) {forged} ended {landing.outcome} at {landing.stage}"
                    + (f": {landing.reason}" if landing.reason else "")
                )
        dead = obs.dead_lettered.get(forged.bus_event_id, [])
        if dead:
            violations.append(f"(i/forged-dead-lettered) {forged} is in {', '.join(dead)}")
        if not landings and not dead and not obs.quarantined.get(forged.bus_event_id):
            violations.append(f"(i/forged-lost) {forged} was handled by no stage and is in no queue")
    for run in [*obs.runs, *obs.forged_runs]:
        for entry in run.entries:
            forged_input = by_id.get(entry.input_id) or by_id.get(str(entry.summary.get("event_id")))
            if forged_input is not None and entry.outcome not in _UNCHANGED:
                violations.append(
                    f"(i/forged-recorded) {forged_input}: {run.ref} recorded it: {_describe(entry)}"
                )
    for contents in obs.published.values():
        detail = json.loads(contents[0])
        cause = by_id.get(str(detail.get("causation_id")))
        if cause is not None:
            violations.append(
                f"(i/forged-followed) {cause}: a stage published {detail.get('type')} {detail.get('id')} "
                "in answer to it"
            )
    for run in obs.forged_runs:
        if run.state is not None or run.entries:
            status = "no state" if run.state is None else run.state.status.value
            violations.append(
                f"(i/forged-run-started) {run.ref}, invented by a forged message, exists ({status}, "
                f"{len(run.entries)} log entries)"
            )
    return violations


def retries_kept_their_schedule(obs: Observation) -> list[str]:
    """(j) No retry came sooner than the failure's backoff or the queue's visibility allowed."""
    return retries_keep_their_schedule(obs.deliveries, obs.retry_policies)


INVARIANTS: tuple[Invariant, ...] = (
    effects_at_most_once,
    inputs_end_in_one_bucket,
    no_stale_transitions,
    nothing_stuck,
    republished_identically,
    approvals_decided_once,
    model_asked_once,
    no_effect_without_authorization,
    forged_messages_refused,
    retries_kept_their_schedule,
)


def check_all(obs: Observation) -> list[str]:
    return [violation for invariant in INVARIANTS for violation in invariant(obs)]
