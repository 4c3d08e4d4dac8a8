"""decide: load the run, check its version and budgets, ask the agent, record the decision, publish."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError

from intentbus import budgets, facts
from intentbus.definition import Decision, DecisionContext, ProposedCommand, Step, Workflow
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.ids import derive_id, idempotency_key
from intentbus.journal import Commit, LogEntry, Outcome
from intentbus.ports import WorkflowStore
from intentbus.registry import Payload
from intentbus.stages.common import (
    COMMIT_ATTEMPTS,
    ConcurrentUpdate,
    Stage,
    StageDeps,
    StageResult,
    commit_then_publish,
    log_only,
    publish,
    quarantined,
    read_fact,
    typed_payload,
)
from intentbus.state import Status, WorkflowState, begin_step, new_run, settle

STAGE = "decide"


@dataclass(frozen=True)
class _Turn:
    """One attempt at deciding on one accepted event."""

    accepted: Envelope
    event: Envelope
    workflow: Workflow
    base: WorkflowState
    is_new: bool
    now: datetime

    def output(
        self, type_name: str, payload: Payload, *, version: int, index: int = 0, step_index: int | None = None
    ) -> Envelope:
        return self.accepted.follow(
            stage=STAGE,
            type=type_name,
            kind=Kind.EVENT,
            index=index,
            time=self.now,
            source=facts.PIPELINE_SOURCE,
            version=version,
            payload=payload.model_dump(mode="json"),
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


@dataclass
class DecideStage(Stage):
    deps: StageDeps
    store: WorkflowStore
    _decisions: dict[str, Decision] = field(default_factory=dict)
    """Decisions made in this invocation, reused if the write must be retried: one model call per event."""

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        try:
            fact = read_fact(body, {facts.EVENT_ACCEPTED: facts.EventAccepted})
        except MalformedInput as error:
            return quarantined(self.deps, STAGE, error, body, message_id)
        try:
            for _ in range(COMMIT_ATTEMPTS):
                result = self._attempt(fact.envelope, fact.payload.event)
                if result is not None:
                    return result
        except MalformedInput as error:
            return quarantined(self.deps, STAGE, error, body, message_id)
        finally:
            self._decisions.pop(fact.envelope.id, None)
        raise ConcurrentUpdate(f"run {fact.envelope.run_id} changed {COMMIT_ATTEMPTS} times under decide")

    def _attempt(self, accepted: Envelope, event: Envelope) -> StageResult | None:
        snapshot = self.store.snapshot(event.tenant_id, event.run_id, STAGE, accepted.id)
        if snapshot.entry is not None:
            return publish(self.deps, Outcome.DUPLICATE, accepted, snapshot.entry.outputs)
        workflow = self.deps.catalog.owner(event.type)
        if workflow is None:
            raise MalformedInput(f"no workflow declares {event.type!r}", field="detail.payload.event.type")
        if event.kind is not Kind.EVENT or event.type not in workflow.events:
            raise MalformedInput(
                f"{event.type!r} ({event.kind.value}) is not an event to decide on",
                field="detail.payload.event.kind",
            )
        typed_payload(workflow.events[event.type].model, event, "detail.payload.event")
        now = self.deps.clock.now()
        state = snapshot.state
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
        stale = _why_stale(state, event, workflow)
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
            accepted=accepted, event=event, workflow=workflow, base=base, is_new=state is None, now=now
        )
        breach = budgets.check(workflow.budget, base, depth=event.depth, now=now)
        if breach is not None:
            return self._pause(turn, breach)
        return self._propose(turn, self._decision(turn, step))

    def _decision(self, turn: _Turn, step: Step) -> Decision:
        key = turn.accepted.id
        if key not in self._decisions:
            assert step.agent is not None
            spec = self.deps.catalog.types.get(turn.event.type)
            context = DecisionContext(
                workflow=turn.workflow.name,
                tenant_id=turn.event.tenant_id,
                run_id=turn.event.run_id,
                step_index=turn.base.step_index,
                event_type=turn.event.type,
                event=spec.model.model_validate(turn.event.payload),
                environment=self.deps.environment,
            )
            self._decisions[key] = step.agent.decide(context)
        return self._decisions[key]

    def _propose(self, turn: _Turn, decision: Decision) -> StageResult | None:
        step_index = turn.base.step_index + 1
        commands = [
            _command(turn, index, proposed, step_index) for index, proposed in enumerate(decision.commands)
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
        outputs = tuple(
            turn.output(
                facts.COMMAND_PROPOSED,
                facts.CommandProposed(
                    command=command,
                    decision_id=decision_id,
                    agent=decision.agent,
                    rationale=decision.rationale,
                    evidence=decision.evidence,
                    confidence=decision.confidence,
                ),
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
                "decision": decision.model_dump(mode="json"),
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
            summary={"reason": breach.reason, "limit": breach.limit},
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


def _command(turn: _Turn, index: int, proposed: ProposedCommand, step_index: int) -> Envelope:
    """The proposal as a typed command; an agent's invalid proposal is malformed, never run."""
    spec = turn.workflow.commands.get(proposed.type)
    if spec is None:
        raise MalformedInput(
            f"the agent proposed {proposed.type!r}, which workflow {turn.workflow.name!r} does not declare",
            field="decision.commands",
        )
    try:
        canonical = spec.model.model_validate(proposed.payload).model_dump(mode="json")
    except ValidationError as error:
        raise MalformedInput.from_validation(error, prefix=f"decision.{proposed.type}.") from None
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


def _why_stale(state: WorkflowState | None, event: Envelope, workflow: Workflow) -> str | None:
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
    return None
