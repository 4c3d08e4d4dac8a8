"""decide: load the run, check its version and budgets, ask the agent, record the decision, publish."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from intentbus import budgets, facts, span_notes
from intentbus.claims import ClaimStore
from intentbus.definition import (
    Agent,
    Decision,
    DecisionContext,
    MalformedDecision,
    ModelAgent,
    ModelProvider,
    ProposedCommand,
    RepairableAgent,
    Step,
    Workflow,
)
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.frozen import Frozen, frozen_dataclass
from intentbus.ids import derive_id, digest, idempotency_key, input_identity
from intentbus.inbound import parse_bus_event
from intentbus.journal import Commit, LogEntry, Outcome
from intentbus.limits import (
    MAX_DECISION_BYTES,
    MAX_EVIDENCE_BYTES,
    MAX_PAYLOAD_BYTES,
    MAX_RATIONALE_CHARS,
    json_bytes,
)
from intentbus.model_shortcuts import dumped_json, model_validated
from intentbus.ports import SnapshotRequest, WorkflowStore
from intentbus.registry import Payload
from intentbus.stages.common import (
    COMMIT_ATTEMPTS,
    BatchReadingStage,
    Fact,
    StageDeps,
    StageResult,
    commit_then_publish,
    detail_envelope,
    fact_of,
    log_only,
    publish,
    quarantined,
    require_detail_type,
    require_recorded,
    retry_on_conflict,
    typed_payload,
)
from intentbus.stages.retired import end_run, why_retired
from intentbus.state import Status, WorkflowState, begin_step, new_run, settle

STAGE = "decide"
_ACCEPTED = {facts.EVENT_ACCEPTED: facts.EventAccepted}
_UNRECORDED_DECISIONS_KEPT = 256
_Proofs = tuple[tuple[str, str], ...]
"""The (stage, input id) entries that may record an accepted event (``_producers``)."""
_Input = tuple[Envelope, Envelope, _Proofs]
"""What decide reads off a message (``_read_input``): the fact it consumes, the event to decide on (the
same envelope for a workflow's outcome event) and the entries that may record the fact."""
logger = logging.getLogger(__name__)


@frozen_dataclass(init=False, eq=False, repr=False)  # never compared nor printed; __init__ by hand
class _Turn(Frozen):
    """One attempt at deciding on one accepted event."""

    accepted: Envelope
    event: Envelope
    workflow: Workflow
    base: WorkflowState
    is_new: bool
    now: datetime
    payload: BaseModel
    """The event's payload as its type's model."""

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        accepted: Envelope,
        event: Envelope,
        workflow: Workflow,
        base: WorkflowState,
        is_new: bool,
        now: datetime,
        payload: BaseModel,
    ) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["accepted"] = accepted
        fields["event"] = event
        fields["workflow"] = workflow
        fields["base"] = base
        fields["is_new"] = is_new
        fields["now"] = now
        fields["payload"] = payload

    def output(
        self,
        type_name: str,
        payload: Payload | dict[str, Any],
        *,
        version: int,
        index: int = 0,
        step_index: int | None = None,
    ) -> Envelope:
        """``payload``: the fact's model, or its ``model_dump(mode="json")`` already made."""
        return self.accepted.follow(
            stage=STAGE,
            type=type_name,
            kind=Kind.EVENT,
            index=index,
            time=self.now,
            source=facts.PIPELINE_SOURCE,
            version=version,
            payload=payload if isinstance(payload, dict) else payload.model_dump(mode="json"),
            step_index=step_index,
        )

    def commit(self, entry: LogEntry, state: WorkflowState) -> Commit:
        return Commit(
            entry=entry,
            tenant_id=self.event.tenant_id,
            run_id=self.event.run_id,
            expected_version=None if self.is_new else self.base.version,
            state=state,
            create=self.is_new,
        )


@frozen_dataclass(init=False, eq=False, repr=False)  # never compared nor printed; __init__ by hand
class _Checked(Frozen):
    """A decision that passed ``_checked``, with each proposed payload as its command's model has it."""

    decision: Decision
    payloads: tuple[dict[str, Any], ...]
    """``_canonical`` of each of ``decision.commands``, in order: validated once, used by ``_command``."""
    sizes: tuple[int, ...]
    """``json_bytes`` of each of ``decision.commands``' payloads, in order: measured once, by ``_checked``."""

    def __init__(
        self, decision: Decision, payloads: tuple[dict[str, Any], ...], sizes: tuple[int, ...]
    ) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["decision"] = decision
        fields["payloads"] = payloads
        fields["sizes"] = sizes


WHY_CHARS = 3000
"""How much of the validation errors a quarantine reason carries (the queue keeps 4,096 characters), so
that the raw output's size and hash after them always fit."""


class RejectedDecision(MalformedInput):
    """The agent's output stayed invalid (after one repair, for a model): quarantined with its output.

    The quarantine record's body stays the input message, so it can be redriven as it is once the
    agent is fixed. The reason (logged, traced, listed) carries the validation errors and the raw
    output's size and sha256, never its text: ``raw_output`` (every attempt's output, as JSON) goes
    only into the quarantine record's field of that name.
    """

    code: ClassVar[str] = "rejected_decision"

    def __init__(self, why: str, *, field: str | None, agent: str, attempts: list[MalformedDecision]) -> None:
        from intentbus.model_output import RawOutput  # only a rejected decision keeps its output

        self.raw_output = RawOutput.of([attempt.raw for attempt in attempts])
        if len(why) > WHY_CHARS:
            why = why[:WHY_CHARS] + "..."
        super().__init__(
            f"{why} | raw output of {len(attempts)} attempt(s): {self.raw_output.summary()}", field=field
        )
        self.agent = agent
        self.attempts = attempts


@dataclass(init=False, eq=False, repr=False)  # never compared nor printed; __init__ by hand
class DecideStage(BatchReadingStage):
    """Turns each accepted event into the commands its workflow's step proposes, within the run's budget."""

    name: ClassVar[str] = STAGE
    deps: StageDeps
    store: WorkflowStore
    models: ModelProvider | None = None
    """Binds the workflows' ``ModelAgent`` steps to a model; ``None``: their scripted fallbacks decide."""
    _decisions: dict[str, _Checked] = field(default_factory=dict)
    """Decisions not yet recorded, by accepted event id: reused when the write is retried, in this
    invocation or (warm) a later one after it failed, so the model is not asked again. Once recorded,
    the log holds the decision and the entry is dropped."""

    def __init__(
        self,
        deps: StageDeps,
        store: WorkflowStore,
        models: ModelProvider | None = None,
        _decisions: dict[str, _Checked] | None = None,
    ) -> None:
        self.deps = deps
        self.store = store
        self.models = models
        self._decisions = {} if _decisions is None else _decisions
        self.__post_init__()

    def reads(self, body: str) -> SnapshotRequest | None:
        """The accepted event's run and where it is recorded (kept for ``handle`` with the parse)."""
        accepted, event, proofs = parsed = _read_input(body, None)  # claim-checked: raises, read alone
        self._parsed[body] = parsed
        if self.models is not None:
            # A model decides in seconds: a read made before the batch's earlier decisions would widen the
            # window in which a concurrent redelivery finds no decision and asks the model again (rule 1).
            return None
        return SnapshotRequest(event.tenant_id, event.run_id, STAGE, accepted.id, proofs=proofs)

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        parsed: _Input | None = self.parsed(body)
        if parsed is None:
            try:
                parsed = _read_input(body, self.deps.claims)
            except MalformedInput as error:
                return self.reject(error, body, message_id)
        accepted, event, producers = parsed
        try:
            result = self._decided(accepted, event, producers, body, message_id)
        except BaseException:
            # Nothing recorded: the decision is kept (a bounded few) so the retry does not ask again.
            while len(self._decisions) > _UNRECORDED_DECISIONS_KEPT:
                self._decisions.pop(next(iter(self._decisions)))
            raise
        self._decisions.pop(accepted.id, None)
        return result

    def _decided(
        self, accepted: Envelope, event: Envelope, producers: _Proofs, body: str, message_id: str | None
    ) -> StageResult:
        try:
            return retry_on_conflict(
                lambda: self._attempt(accepted, event, producers),
                exhausted=f"run {accepted.run_id} changed {COMMIT_ATTEMPTS} times under decide",
            )
        except RejectedDecision as error:
            logger.warning(
                "decision quarantined",
                extra={
                    "agent": error.agent,
                    "reason": error.reason,
                    "field": error.field,
                    "attempts": [{"reason": a.reason, "field": a.field} for a in error.attempts],
                    **error.raw_output.log_fields(),
                },
            )
            return quarantined(self.deps, STAGE, error, body, message_id, raw_output=error.raw_output.text)
        except MalformedInput as error:
            return self.reject(error, body, message_id)

    def _attempt(self, accepted: Envelope, event: Envelope, producers: _Proofs) -> StageResult | None:
        """``producers``: ``_producers(accepted, event)``, derived once for the record."""
        snapshot = self.store.snapshot(event.tenant_id, event.run_id, STAGE, accepted.id, proofs=producers)
        if snapshot.entry is not None:
            return publish(self.deps, Outcome.DUPLICATE, accepted, snapshot.entry.outputs)
        require_recorded(snapshot, accepted, producers)
        now = self.deps.clock.now()
        state = snapshot.state
        retired = why_retired(self.deps, state)
        if retired is not None:
            assert state is not None
            return end_run(
                self.deps,
                self.store,
                stage=STAGE,
                incoming=accepted,
                input_id=accepted.id,
                input_type=event.type,
                state=state,
                reason=retired,
            )
        workflow = self.deps.catalog.owner(event.type)
        if workflow is None and (state is None or state.terminal):
            # Accepted before a redeploy dropped its workflow: recorded, never decided.
            return self._record_only(
                accepted=accepted,
                event=event,
                outcome=Outcome.STALE,
                reason=f"no workflow in this deployment declares {event.type!r}: not decided",
                now=now,
                state=state,
            )
        if workflow is None:
            raise MalformedInput(f"no workflow declares {event.type!r}", field="detail.payload.event.type")
        if event.kind is not Kind.EVENT or event.type not in workflow.events:
            raise MalformedInput(
                f"{event.type!r} ({event.kind.value}) is not an event to decide on",
                field="detail.payload.event.kind",
            )
        payload = typed_payload(workflow.events[event.type].model, event, "detail.payload.event")
        step = workflow.steps.get(event.type)
        if step is None or step.agent is None:
            # An outcome no step follows (such as the run's last): recorded, nothing to decide.
            return self._record_only(
                accepted=accepted,
                event=event,
                outcome=Outcome.APPLIED,
                reason=f"no step on {event.type}",
                now=now,
                state=state,
            )
        stale = _why_stale(state, event, workflow, accepted.id)
        if stale is not None:
            return self._record_only(
                accepted=accepted, event=event, outcome=Outcome.STALE, reason=stale, now=now, state=state
            )
        base = state or new_run(
            tenant_id=event.tenant_id,
            run_id=event.run_id,
            workflow=workflow.name,
            definition_version=workflow.version,
            step_on=event.type,
            now=now,
        )
        turn = _Turn(
            accepted=accepted,
            event=event,
            workflow=workflow,
            base=base,
            is_new=state is None,
            now=now,
            payload=payload,
        )
        breach = budgets.check(budgets.for_run(workflow, base), base, depth=event.depth, now=now)
        if breach is not None:
            return self._pause(turn, breach)
        return self._propose(turn, self._decision(turn, step))

    def _decision(self, turn: _Turn, step: Step) -> _Checked:
        key = turn.accepted.id
        if key not in self._decisions:
            assert step.agent is not None
            context = DecisionContext(
                workflow=turn.workflow.name,
                tenant_id=turn.event.tenant_id,
                run_id=turn.event.run_id,
                step_index=turn.base.step_index,
                event_type=turn.event.type,
                event=turn.payload,
                environment=self.deps.environment,
                commands=turn.workflow.offered(step),
            )
            if step.context is not None:
                context = replace(context, selection=step.context(context))
            agent = self._agent(step.agent)
            started = time.perf_counter()
            checked = self._decide(turn, agent, context)
            span_notes.note(
                {
                    span_notes.AGENT: agent.name,
                    span_notes.MODEL_INPUT_TOKENS: checked.decision.tokens.input_tokens,
                    span_notes.MODEL_OUTPUT_TOKENS: checked.decision.tokens.output_tokens,
                    span_notes.MODEL_LATENCY_MS: round((time.perf_counter() - started) * 1000, 3),
                }
            )
            self._decisions[key] = checked
        return self._decisions[key]

    def _agent(self, agent: Agent) -> Agent:
        if isinstance(agent, ModelAgent) and self.models is not None:
            return self.models.agent(agent)
        return agent

    def _decide(self, turn: _Turn, agent: Agent, context: DecisionContext) -> _Checked:
        """The agent's decision, checked; a model gets one repair attempt, shown why it was refused."""
        try:
            return _checked(turn.workflow, context, agent.decide(context))
        except MalformedDecision as failure:
            first = failure
        if not isinstance(agent, RepairableAgent):  # a scripted agent would answer the same again
            raise RejectedDecision(
                f"agent {agent.name!r} proposed an invalid decision: {first.reason}",
                field=first.field,
                agent=agent.name,
                attempts=[first],
            )
        try:
            repaired = _checked(turn.workflow, context, agent.repair(context, first))
        except MalformedDecision as second:
            raise RejectedDecision(
                f"agent {agent.name!r}'s answer is still invalid after one repair attempt: {second.reason}",
                field=second.field,
                agent=agent.name,
                attempts=[first, second],
            ) from None
        # The refused answer was paid for too: the run's token budget counts both.
        tokens = first.tokens + repaired.decision.tokens
        return replace(repaired, decision=repaired.decision.model_copy(update={"tokens": tokens}))

    def _propose(self, turn: _Turn, checked: _Checked) -> StageResult | None:
        decision = checked.decision
        step_index = turn.base.step_index + 1
        commands = [
            _command(turn, index, proposed, step_index, payload)
            for index, (proposed, payload) in enumerate(zip(decision.commands, checked.payloads, strict=True))
        ]
        state = begin_step(
            turn.base,
            step_on=turn.event.type,
            command_ids=tuple(command.id for command in commands),
            tokens=decision.tokens.total,
            depth=turn.event.depth,
            now=turn.now,
            is_new=turn.is_new,
        )
        decision_id = derive_id(turn.accepted.id, "decision")
        dumped = dumped_json(decision)
        outputs = tuple(
            turn.output(
                facts.COMMAND_PROPOSED,
                proposed_json(command, decision_id, decision, dumped),
                version=state.version,
                index=index,
                step_index=step_index,
            )
            for index, command in enumerate(commands)
        )
        entry = LogEntry(
            stage=STAGE,
            input_id=turn.accepted.id,
            input_type=turn.event.type,
            outcome=Outcome.APPLIED,
            at=turn.now,
            version=state.version,
            outputs=outputs,
            summary={
                "decision_id": decision_id,
                "event_id": turn.event.id,
                "decision": _summarized(dumped, decision, checked.sizes),
            },
        )
        return commit_then_publish(self.deps, self.store, turn.commit(entry, state), turn.accepted)

    def _pause(self, turn: _Turn, breach: budgets.BudgetBreach) -> StageResult | None:
        state = settle(turn.base, status=Status.PAUSED, reason=breach.reason, now=turn.now)
        if turn.is_new:
            state = state.model_copy(update={"version": turn.base.version})
        review = facts.HumanReviewRequired(reason=breach.reason, limit=breach.limit, spend=breach.spend)
        entry = LogEntry(
            stage=STAGE,
            input_id=turn.accepted.id,
            input_type=turn.event.type,
            outcome=Outcome.PAUSED,
            at=turn.now,
            version=state.version,
            outputs=(turn.output(facts.HUMAN_REVIEW_REQUIRED, review, version=state.version),),
            summary={
                "reason": breach.reason,
                "limit": breach.limit,
                "spend": breach.spend,
                "budget": budgets.describe(budgets.for_run(turn.workflow, turn.base)),
                # The paused input, so that a person's resume can publish it again (intentbus.review).
                "event_id": turn.event.id,
                "event": turn.event.to_json_dict(),
            },
        )
        return commit_then_publish(self.deps, self.store, turn.commit(entry, state), turn.accepted)

    def _record_only(
        self,
        *,
        accepted: Envelope,
        event: Envelope,
        outcome: Outcome,
        reason: str,
        now: datetime,
        state: WorkflowState | None,
    ) -> StageResult | None:
        entry = LogEntry(
            stage=STAGE,
            input_id=accepted.id,
            input_type=event.type,
            outcome=outcome,
            at=now,
            version=0 if state is None else state.version,
            summary={"reason": reason, "event_id": event.id},
        )
        return commit_then_publish(
            self.deps, self.store, log_only(entry, event.tenant_id, event.run_id), accepted
        )


def _checked(workflow: Workflow, context: DecisionContext, decision: Decision) -> _Checked:
    """The decision if it proposes at most ``max_commands``, each a command the step offers with a valid
    payload; else malformed. Every agent is held to it, scripted ones too."""
    problems: list[MalformedInput] = []
    payloads: list[dict[str, Any]] = []
    if len(decision.commands) > workflow.max_commands:
        problems.append(
            MalformedInput(
                f"the agent proposed {len(decision.commands)} commands; workflow {workflow.name!r} allows "
                f"at most {workflow.max_commands} per decision",
                field="decision.commands",
            )
        )
    for proposed in decision.commands:
        if proposed.type in workflow.commands and proposed.type not in context.commands:
            problems.append(
                MalformedInput(
                    f"the agent proposed {proposed.type!r}, which the step on {context.event_type} does not "
                    f"offer (it offers {sorted(context.commands)})",
                    field="decision.commands",
                )
            )
            continue
        try:
            payloads.append(_canonical(workflow, proposed))
        except MalformedInput as problem:
            problems.append(problem)
    sizes = tuple(json_bytes(proposed.payload) for proposed in decision.commands)
    problems.extend(_oversized(decision, sizes))
    if problems:
        raise MalformedDecision(
            "; ".join(problem.reason for problem in problems),
            raw={"decision": decision.model_dump(mode="json")},
            field=problems[0].field,
            tokens=decision.tokens,
        )
    return _Checked(decision, tuple(payloads), sizes)


SUMMARY_PAYLOAD_BYTES = 4 * 1024
"""A proposed payload larger than this is summarized in the decide entry by its size and sha256: the
entry's outputs hold it whole, and one DynamoDB item holds both (400 KB at most)."""


def _summarized(summary: dict[str, Any], decision: Decision, sizes: tuple[int, ...]) -> dict[str, Any]:
    """``summary``: the decision's ``model_dump(mode="json")``, its large payloads replaced by their size
    and sha256. ``sizes``: ``json_bytes`` of each proposal's payload as the agent gave it.

    A dumped payload equal to the given one is the same JSON text, so its size is the one measured: a
    JSON value dumps as the same value of the same type, and a value that dumps as another type (a
    tuple, a datetime, a ``Decimal``, a key that is no ``str``) no longer compares equal; an ``int`` or
    ``str`` subclass dumps as the plain value it equals, which ``json`` encodes as the same text."""
    for command, proposed, measured in zip(summary["commands"], decision.commands, sizes, strict=True):
        payload = command["payload"]
        size = measured if payload == proposed.payload else json_bytes(payload)
        if size > SUMMARY_PAYLOAD_BYTES:
            command["payload"] = {"bytes": size, "sha256": digest(command["payload"]), "in": "outputs"}
    return summary


def proposed_json(
    command: Envelope, decision_id: str, decision: Decision, dumped: dict[str, Any]
) -> dict[str, Any]:
    """``facts.CommandProposed`` of ``command`` and ``decision`` as ``model_dump(mode="json")`` writes it,
    the same keys in the same order, from ``dumped`` (``decision.model_dump(mode="json")``): validating
    the decision's values again would only copy them. Values of other types are left to the model."""
    evidence = decision.evidence
    if not (
        type(command) is Envelope
        and type(decision) is Decision
        and type(decision.agent) is str
        and type(decision.rationale) is str
        and type(decision.confidence) is float
        and type(evidence) is dict
        and all(type(key) is str for key in evidence)
    ):
        return facts.CommandProposed(
            command=command,
            decision_id=decision_id,
            agent=decision.agent,
            rationale=decision.rationale,
            evidence=evidence,
            confidence=decision.confidence,
        ).model_dump(mode="json")
    return {
        "command": command.to_json_dict(),
        "decision_id": decision_id,
        "agent": dumped["agent"],
        "producer": None,
        "rationale": dumped["rationale"],
        "evidence": dumped["evidence"],
        "confidence": dumped["confidence"],
    }


def _oversized(decision: Decision, payloads: tuple[int, ...]) -> list[MalformedInput]:
    """What of the decision is over its bound (``intentbus.limits``): told by size, never by content.
    ``payloads``: ``json_bytes`` of each proposal's payload, in order."""
    found: list[MalformedInput] = []
    if len(decision.rationale) > MAX_RATIONALE_CHARS:
        found.append(
            MalformedInput(
                f"the rationale has {len(decision.rationale):,} characters; at most {MAX_RATIONALE_CHARS:,}",
                field="decision.rationale",
            )
        )
    evidence = json_bytes(decision.evidence)
    if evidence > MAX_EVIDENCE_BYTES:
        found.append(
            MalformedInput(
                f"the evidence is {evidence:,} bytes as JSON; at most {MAX_EVIDENCE_BYTES:,}",
                field="decision.evidence",
            )
        )
    for proposed, size in zip(decision.commands, payloads, strict=True):
        if size > MAX_PAYLOAD_BYTES:
            found.append(
                MalformedInput(
                    f"a proposed {proposed.type} is {size:,} bytes as JSON; at most {MAX_PAYLOAD_BYTES:,}",
                    field="decision.commands",
                )
            )
    # Each proposal carries the rationale and the evidence: the decide entry holds them all.
    total = sum(payloads) + len(payloads) * (evidence + len(decision.rationale.encode()))
    if not found and total > MAX_DECISION_BYTES:
        found.append(
            MalformedInput(
                f"the decision's {len(payloads)} proposals with their rationale and evidence are "
                f"{total:,} bytes; at most {MAX_DECISION_BYTES:,}",
                field="decision.commands",
            )
        )
    return found


def _canonical(workflow: Workflow, proposed: ProposedCommand) -> dict[str, Any]:
    spec = workflow.commands.get(proposed.type)
    if spec is None:
        # Not named: it is the agent's own text, and a reason is logged.
        raise MalformedInput(
            f"the agent proposed a command type of {len(proposed.type)} characters, which workflow "
            f"{workflow.name!r} does not declare",
            field="decision.commands",
        )
    model = spec.model
    try:
        return dumped_json(model_validated(model, proposed.payload))
    except ValidationError as error:
        raise MalformedInput.from_validation(error, model, prefix=f"decision.{proposed.type}.") from None


def _command(
    turn: _Turn, index: int, proposed: ProposedCommand, step_index: int, canonical: dict[str, Any]
) -> Envelope:
    """The proposal as a typed command, its payload ``canonical`` (``_checked`` found it valid)."""
    return turn.accepted.follow(
        stage="decide.command",
        type=proposed.type,
        kind=Kind.COMMAND,
        index=index,
        time=turn.now,
        source=facts.PIPELINE_SOURCE,
        step_index=step_index,
        payload=canonical,
        idempotency_key=idempotency_key(
            turn.accepted.run_id, step_index, {"type": proposed.type, "payload": canonical}
        ),
    )


def _read_input(body: str, claims: ClaimStore | None) -> _Input:
    """An EventAccepted (validate's, or a reviewer's resume), or a workflow's outcome event straight from
    record: its proof is record's entry for the outcome it follows, so validate need not look at it again
    (a hop, a write and a publish a step fewer)."""
    bus_event = parse_bus_event(body)
    if bus_event.source == facts.PIPELINE_SOURCE:
        fact: Fact[facts.EventAccepted] = fact_of(bus_event, _ACCEPTED, claims)
        accepted, event = fact.envelope, fact.payload.event
        return accepted, event, _producers(accepted, event)
    if bus_event.source != facts.WORKFLOW_SOURCE:
        raise MalformedInput(
            f"source {bus_event.source!r} is neither {facts.PIPELINE_SOURCE!r} nor {facts.WORKFLOW_SOURCE!r}",
            field="source",
        )
    outcome = detail_envelope(bus_event, claims)
    require_detail_type(bus_event, outcome, field="detail-type")
    if outcome.source != facts.WORKFLOW_SOURCE:
        raise MalformedInput(
            f"the envelope's source {outcome.source!r} is not the bus event's {facts.WORKFLOW_SOURCE!r}",
            field="detail.source",
        )
    return outcome, outcome, (("record", outcome.causation_id or ""),)


def _producers(accepted: Envelope, event: Envelope) -> _Proofs:
    """Where an EventAccepted is recorded: validate's entry for the input (by its identity; by its id
    before that), or a reviewer's resume, whose entry is keyed by the pause it answers. Validate derives
    the fact's id from the input's identity: a fact with that id can only be its, so its entry alone is
    read (the fact must still match it exactly); each entry not read saves a read unit."""
    identity = input_identity(event.tenant_id, event.source, event.id)
    if accepted.id == derive_id(identity, "validate", 0):
        return (("validate", identity),)
    return (("validate", event.id), ("review", accepted.causation_id or ""))


def _why_stale(
    state: WorkflowState | None, event: Envelope, workflow: Workflow, accepted_id: str
) -> str | None:
    if state is None:
        if event.type in workflow.starts_on:
            return None
        return f"no run {event.run_id} exists for {event.type} to continue"
    if state.workflow != workflow.name:
        return f"run {state.run_id} is a {state.workflow} run, not {workflow.name}"
    if state.terminal:
        return f"the run is already {state.status.value}"
    if state.status is not Status.RUNNING:
        return f"the run is {state.status.value}"
    if event.step_index != state.step_index or state.pending:
        return f"the event is from step {event.step_index}; the run is at step {state.step_index}"
    resumed = state.resumed
    if resumed is not None and resumed.step_index == state.step_index and accepted_id != resumed.accepted_id:
        return f"{resumed.by} resumed step {state.step_index} to decide {resumed.accepted_id} again, not this"
    return None
