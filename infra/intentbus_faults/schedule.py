"""Seeded schedules: one seed gives a schedule's inputs and the faults it injects, nothing else.

The faults are the local cloud's (intentbus_local.faults) plus ``forge``, the attacker (forge.py).

Every run of a schedule has its own tenant and run id (derived from the seed), so schedules can share
one local cloud, and ``python -m intentbus_faults.run --schedules 1 --seed S`` replays schedule S alone.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from intentbus_faults import fanout_workflow
from intentbus_local import seed as world
from intentbus_local.faults import ALL_KINDS, CALL_KINDS, FaultPlan

WORKFLOWS = f"intentbus.workflows.incident,intentbus.workflows.direct_tool,{fanout_workflow.MODULE}"

INCIDENT = "incident_response"
FANOUT = fanout_workflow.workflow.name
DIRECT = "direct_tool_call"

_SEED_TOOL_CALL = Path(__file__).parents[2] / "infra" / "events" / "seed_tool_call.json"
FOCUS_SCOPES = tuple(
    f"{stage}{suffix}"
    for stage in ("Validate", "Decide", "Authorize", "Execute", "Record")
    for suffix in ("Function", "Queue")
)
"""Where a schedule may concentrate its faults: a function's AWS calls or a queue's deliveries."""
_CALL_RATES = (0.01, 0.03, 0.06)
"""Per eligible AWS call, for each enabled call fault kind."""
_DELIVERY_RATES = (0.05, 0.15, 0.3)
"""Per message (duplicate), per batch (reorder) or per invocation (visibility lapse)."""

FORGE = "forge"
"""The attacker's fault kind: forged facts and inputs put on the buses among real traffic (forge.py)."""
KINDS: tuple[str, ...] = (*ALL_KINDS, FORGE)
"""Every fault kind a schedule draws from: the local cloud's (intentbus_local.faults) and ``forge``."""
_FORGE_RATES = (0.05, 0.15, 0.3)
"""Per stage invocation, the chance the attacker puts one forged message."""

AUTHORIZED_ALTERED = "authorized-altered"
"""CommandAuthorized for a real pending or waiting command, its payload changed (same id and key)."""
AUTHORIZED_REKEYED = "authorized-rekeyed"
"""The same, under an idempotency key of the attacker's own (no record of the real command is hit)."""
AUTHORIZED_UNRECORDED = "authorized-unrecorded"
"""CommandAuthorized for a real pending or waiting command, unchanged, that no verdict allowed."""
OUTCOME_UNAUTHORIZED = "outcome-unauthorized"
"""CommandFailed or CommandExecuted for a command waiting for approval (else one still pending)."""
ACCEPTED_NEW_RUN = "accepted-new-run"
"""EventAccepted validate never recorded, for a run that does not exist."""
ACCEPTED_EXISTING_RUN = "accepted-existing-run"
"""EventAccepted validate never recorded, for an existing run."""
PROPOSED_DIRECT = "proposed-direct"
"""CommandProposed carrying a direct command (TOOL_EXECUTION_REQUESTED) that validate never recorded."""
PROPOSED_ALTERED = "proposed-altered"
"""CommandProposed for a real pending command of decide's, its payload changed."""
DOMAIN_ON_INGRESS = "domain-on-ingress"
"""A domain event (source intentbus.workflow) record never published, sent to the ingress."""
DOMAIN_ON_PIPELINE = "domain-on-pipeline"
"""A domain event record never published, put on the pipeline bus (an attacker past IAM): it goes
straight to decide."""
PIPELINE_ON_INGRESS = "pipeline-on-ingress"
"""A pipeline fact sent to the ingress claiming the pipeline's source."""
FORGERIES: tuple[str, ...] = (
    AUTHORIZED_ALTERED,
    AUTHORIZED_REKEYED,
    AUTHORIZED_UNRECORDED,
    OUTCOME_UNAUTHORIZED,
    ACCEPTED_NEW_RUN,
    ACCEPTED_EXISTING_RUN,
    PROPOSED_DIRECT,
    PROPOSED_ALTERED,
    DOMAIN_ON_INGRESS,
    DOMAIN_ON_PIPELINE,
    PIPELINE_ON_INGRESS,
)


@dataclass(frozen=True)
class RunRef:
    tenant_id: str
    run_id: str
    workflow: str

    def __str__(self) -> str:
        return f"{self.workflow} {self.tenant_id}/{self.run_id}"


APPROVE, REJECT = "approve", "reject"


@dataclass(frozen=True)
class ApprovalPlan:
    """What the approver of a production scale-up does, and when (approval schedules)."""

    decisions: tuple[str, ...]
    """``approve`` / ``reject`` in order; two of them are a duplicate (or contradicting) decision."""
    early: bool = False
    """Decide as soon as authorize has written the approval, while the pipeline is still running."""
    expiry_offset: float | None = None
    """Move the virtual clock to ``expires_at + expiry_offset`` seconds first: the decision races expiry."""
    sweep_first: bool = False
    """With an offset: the expiry rule fires before the decision arrives."""

    def describe(self) -> str:
        text = "+".join(self.decisions) + (" early" if self.early else "")
        if self.expiry_offset is not None:
            text += f" at expiry{self.expiry_offset:+.0f}s" + (" after the sweep" if self.sweep_first else "")
        return text


@dataclass(frozen=True)
class Input:
    envelope: Mapping[str, Any]
    source: str
    detail_type: str
    run: RunRef | None
    """None for a malformed input, which must end in quarantine."""
    copies: int = 1
    """How many times the producer sends it (at-least-once producers)."""
    late: bool = False
    """The extra copies are sent once the pipeline is under way, not with the first."""
    approval: ApprovalPlan | None = None
    """A production incident: its scale-up waits for a person, who does this."""

    def entry(self) -> dict[str, str]:
        return {"Source": self.source, "DetailType": self.detail_type, "Detail": json.dumps(self.envelope)}


@dataclass(frozen=True)
class Schedule:
    seed: int
    inputs: tuple[Input, ...]
    rates: Mapping[str, float] = field(default_factory=dict)
    max_faults: int = 0
    head_start: int = 0
    """Invocations before the late copies are sent."""
    forced: Mapping[tuple[str, int], str] = field(default_factory=dict)
    """(site, occurrence) -> fault kind, injected whatever the rates say (hand-made schedules)."""
    focus: tuple[str, float] | None = None
    """(function or queue logical id, rate multiplier): where this schedule concentrates its faults."""
    max_forged: int = 0
    """With ``rates[FORGE]``: how many forged messages the attacker puts at most."""
    forgeries: tuple[str, ...] = FORGERIES
    """Which forgeries the attacker may choose from (hand-made schedules pick one)."""

    @property
    def runs(self) -> list[RunRef]:
        return [i.run for i in self.inputs if i.run is not None]

    @property
    def forge_rate(self) -> float:
        return self.rates.get(FORGE, 0.0) if self.max_forged else 0.0

    def plan(self) -> FaultPlan:
        """The local cloud's faults; ``forge`` is the harness's own (forge.Forger), not the plan's."""
        rates = {kind: rate for kind, rate in self.rates.items() if kind != FORGE}
        return FaultPlan(self.seed, rates, max_faults=self.max_faults, forced=self.forced, focus=self.focus)

    def describe(self) -> str:
        runs = ", ".join(str(run) for run in self.runs) or "no runs"
        rates = ", ".join(f"{kind} {rate:g}" for kind, rate in sorted(self.rates.items())) or "none"
        if self.focus:
            rates += f"; focus on {self.focus[0]} x{self.focus[1]:g}"
        if self.forced:
            rates += "; forced " + ", ".join(f"{k}@{s}#{n}" for (s, n), k in sorted(self.forced.items()))
        if self.forge_rate:
            chosen = "" if self.forgeries == FORGERIES else f" of {', '.join(self.forgeries)}"
            rates += f"; forging at most {self.max_forged}{chosen}"
        extra = sum(i.copies - 1 for i in self.inputs)
        malformed = sum(1 for i in self.inputs if i.run is None)
        approvals = "; ".join(f"{i.run}: {i.approval.describe()}" for i in self.inputs if i.approval)
        text = (
            f"seed {self.seed}: {runs}; {extra} producer duplicate(s), {malformed} malformed; "
            f"faults: {rates} (at most {self.max_faults})"
        )
        return text + (f"; approvals: {approvals}" if approvals else "")


@dataclass(frozen=True)
class Example:
    """A sample input of a workflow under test (``Workflow.examples`` or ``--events``)."""

    workflow: str
    envelope: Mapping[str, Any]

    @property
    def source(self) -> str:
        return str(self.envelope.get("source") or DEFAULT_SOURCE)

    @property
    def detail_type(self) -> str:
        return str(self.envelope.get("type") or self.envelope.get("event_type"))


DEFAULT_SOURCE = "intentbus.cli"
"""The source an example without one is sent as (``intentbus emit``'s default too)."""


@dataclass(frozen=True)
class Drive:
    """What a schedule's inputs are drawn from: the built-in generators of the seed workflows named
    in ``seeded`` (with approval plans, fan-out lines, ...), and the examples of any other workflow."""

    seeded: frozenset[str] = frozenset({INCIDENT, FANOUT, DIRECT})
    examples: tuple[Example, ...] = ()

    @property
    def sources(self) -> list[str]:
        return sorted({example.source for example in self.examples})


SEED_DRIVE = Drive()


def generate(seed: int, *, kinds: Sequence[str] = KINDS, drive: Drive = SEED_DRIVE) -> Schedule:
    rng = random.Random(seed)
    counts = rng.choice((0, 1, 1, 2)), rng.choice((0, 1, 1, 2)), rng.choice((0, 0, 1))
    incident, fanout, direct = (
        n if name in drive.seeded else 0 for n, name in zip(counts, (INCIDENT, FANOUT, DIRECT), strict=True)
    )
    own = rng.choice((1, 1, 2, 3)) if drive.examples else 0
    if incident + fanout + direct + own == 0:
        if FANOUT in drive.seeded or not (drive.seeded or drive.examples):
            fanout = 1
        elif drive.examples:
            own = 1
        elif INCIDENT in drive.seeded:
            incident = 1
        else:
            direct = 1
    inputs: list[Input] = []
    for k in range(incident):
        plan = _approval_plan(rng) if rng.random() < 0.4 else None
        item = incident_input(seed, k, environment="production" if plan else "dev")
        inputs.append(replace(_copies(rng, item), approval=plan))
    for k in range(fanout):
        inputs.append(_copies(rng, fanout_input(seed, k, _lines(rng))))
    for k in range(direct):
        inputs.append(_copies(rng, direct_input(seed, k)))
    for k in range(own):
        inputs.append(_copies(rng, example_input(rng.choice(drive.examples), seed, k)))
    if rng.random() < 0.2:
        own_only = drive.examples and INCIDENT not in drive.seeded
        inputs.append(malformed_example(drive.examples[0], seed) if own_only else malformed_input(seed))
    rng.shuffle(inputs)
    rates: dict[str, float] = {}
    if rng.random() >= 0.05 and kinds:
        for kind in rng.sample(list(kinds), k=rng.randint(1, min(4, len(kinds)))):
            rates[kind] = rng.choice(
                _FORGE_RATES if kind == FORGE else _CALL_RATES if kind in CALL_KINDS else _DELIVERY_RATES
            )
    focus = (rng.choice(FOCUS_SCOPES), 5.0) if rng.random() < 0.5 else None
    return Schedule(
        seed=seed,
        inputs=tuple(inputs),
        rates=rates,
        max_faults=rng.randint(1, 6),
        head_start=rng.randint(2, 15),
        focus=focus,
        max_forged=rng.randint(1, 6) if FORGE in rates else 0,
    )


def _approval_plan(rng: random.Random) -> ApprovalPlan:
    roll = rng.random()
    decisions = (
        (APPROVE,)
        if roll < 0.45
        else (REJECT,)
        if roll < 0.6
        else (APPROVE, APPROVE)
        if roll < 0.8
        else (APPROVE, REJECT)
        if roll < 0.9
        else (REJECT, APPROVE)
    )
    racing = rng.random() < 0.4
    return ApprovalPlan(
        decisions=decisions,
        early=rng.random() < 0.3,
        expiry_offset=rng.choice((-90.0, -5.0, 0.0, 5.0, 90.0)) if racing else None,
        sweep_first=racing and rng.random() < 0.5,
    )


def _copies(rng: random.Random, item: Input) -> Input:
    roll = rng.random()
    copies = 1 if roll < 0.75 else 2 if roll < 0.95 else 3
    return Input(
        envelope=item.envelope,
        source=item.source,
        detail_type=item.detail_type,
        run=item.run,
        copies=copies,
        late=copies > 1 and rng.random() < 0.5,
    )


def _lines(rng: random.Random) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [
        {"sku": "sku-a", "quantity": rng.randint(1, 9), "channel": "web"},
        {"sku": "sku-b", "quantity": rng.randint(1, 9), "channel": "web"},
    ]
    for line in lines:
        if rng.random() < 0.3:
            line["ledger"] = "legacy"
    roll, odd = rng.random(), rng.randrange(2)
    if roll < 0.12:
        lines[odd]["channel"] = "partner"
    elif roll < 0.22:
        lines[odd]["channel"] = "blocked"
    elif roll < 0.3:
        lines[odd]["sku"] = "discontinued-c"
    return lines


def incident_input(seed: int, k: int = 0, *, environment: str = "dev") -> Input:
    run = RunRef(f"t{seed}-inc{k}", f"run-{seed}-inc{k}", INCIDENT)
    envelope = world.latency_event(
        tenant_id=run.tenant_id, event_id=f"evt-{seed}-inc{k}", environment=environment
    )
    envelope["run_id"] = run.run_id
    return Input(
        envelope=envelope, source=str(envelope["source"]), detail_type=str(envelope["type"]), run=run
    )


def fanout_input(seed: int, k: int = 0, lines: Sequence[Mapping[str, Any]] | None = None) -> Input:
    run = RunRef(f"t{seed}-fan{k}", f"run-{seed}-fan{k}", FANOUT)
    envelope = {
        "id": f"evt-{seed}-fan{k}",
        "type": fanout_workflow.REQUESTED,
        "source": "orders.example",
        "tenant_id": run.tenant_id,
        "run_id": run.run_id,
        "payload": {
            "order_id": f"order-{seed}-{k}",
            "lines": list(
                lines
                or (
                    {"sku": "sku-a", "quantity": 2, "channel": "web"},
                    {"sku": "sku-b", "quantity": 3, "channel": "web"},
                )
            ),
        },
    }
    return Input(envelope=envelope, source="orders.example", detail_type=fanout_workflow.REQUESTED, run=run)


def direct_input(seed: int, k: int = 0) -> Input:
    run = RunRef(f"t{seed}-dir{k}", f"run-{seed}-dir{k}", DIRECT)
    envelope: dict[str, Any] = json.loads(_SEED_TOOL_CALL.read_text())
    envelope.update(tenant_id=run.tenant_id, run_id=run.run_id, idempotency_key=f"idem_{seed}_dir{k}")
    envelope["payload"]["parameters"]["customer_id"] = f"cust-{seed}-{k}"
    return Input(envelope=envelope, source="crm.example", detail_type=str(envelope["event_type"]), run=run)


def example_input(example: Example, seed: int, k: int = 0) -> Input:
    """The example as a run of its own: the example's tenant (its allow-lists and budgets apply),
    a run id, event id and idempotency key of this schedule's."""
    envelope = copy.deepcopy(dict(example.envelope))
    run = RunRef(str(envelope.get("tenant_id")), f"run-{seed}-ex{k}", example.workflow)
    envelope.update(id=f"evt-{seed}-ex{k}", run_id=run.run_id)
    if "idempotency_key" in envelope:
        envelope["idempotency_key"] = f"idem_{seed}_ex{k}"
    return Input(envelope=envelope, source=example.source, detail_type=example.detail_type, run=run)


def malformed_example(example: Example, seed: int) -> Input:
    """The example without its payload: refused by validate, it must end in quarantine."""
    envelope = {
        key: value
        for key, value in copy.deepcopy(dict(example.envelope)).items()
        if key not in ("payload", "data")
    }
    envelope.update(id=f"evt-{seed}-bad", run_id=f"run-{seed}-bad")
    return Input(envelope=envelope, source=example.source, detail_type=example.detail_type, run=None)


def malformed_input(seed: int) -> Input:
    envelope = {
        "id": f"evt-{seed}-bad",
        "type": "ServiceLatencyIncreased",
        "source": "monitoring.example",
        "tenant_id": f"t{seed}-bad",
        "payload": {"service": "checkout-api"},
    }
    return Input(
        envelope=envelope, source="monitoring.example", detail_type="ServiceLatencyIncreased", run=None
    )


def schedule_of(
    seed: int,
    *inputs: Input,
    forced: Mapping[tuple[str, int], str] | None = None,
    rates: Mapping[str, float] | None = None,
    max_faults: int = 0,
    forge: Sequence[str] = (),
    max_forged: int = 1,
) -> Schedule:
    """A hand-made schedule (tests): these inputs, these faults at these sites (``forced``); ``forge``
    names the forgeries the attacker tries at every stage invocation, ``max_forged`` times at most."""
    return Schedule(
        seed=seed,
        inputs=tuple(inputs),
        rates={**(rates or {}), **({FORGE: 1.0} if forge else {})},
        max_faults=max_faults,
        forced=dict(forced or {}),
        max_forged=max_forged if forge else 0,
        forgeries=tuple(forge) or FORGERIES,
    )
