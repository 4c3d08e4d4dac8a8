"""record: append the outcome to the log, move the run on (version-checked), publish its domain events."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, cast

from pydantic import ValidationError

from intentbus import facts
from intentbus.definition import Step, Workflow
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput, NotRecorded
from intentbus.extensions import RUN_ENDED, ExtensionProblem, check_extensions
from intentbus.ids import approval_id
from intentbus.journal import Commit, LogEntry, Outcome, Snapshot
from intentbus.model_shortcuts import json_values, validated
from intentbus.ports import SnapshotRequest, WorkflowStore
from intentbus.registry import Payload
from intentbus.stages.common import (
    COMMIT_ATTEMPTS,
    BatchReadingStage,
    Fact,
    StageDeps,
    StageResult,
    commit_then_publish,
    content_digest,
    fact_digest,
    log_only,
    pipeline_fact,
    publish,
    read_fact,
    require_recorded,
    retry_on_conflict,
)
from intentbus.stages.retired import why_retired
from intentbus.state import LEGACY_CHECKS, Status, WorkflowState, record_result, settle

STAGE = "record"

OutcomeFact = (
    facts.CommandExecuted
    | facts.CommandFailed
    | facts.CommandDenied
    | facts.CommandOutcomeUnknown
    | facts.CommandConflicted
    | facts.CommandSkipped
)
_OUTCOMES: dict[str, type[Payload]] = {
    facts.COMMAND_EXECUTED: facts.CommandExecuted,
    facts.COMMAND_FAILED: facts.CommandFailed,
    facts.COMMAND_DENIED: facts.CommandDenied,
    facts.COMMAND_OUTCOME_UNKNOWN: facts.CommandOutcomeUnknown,
    facts.COMMAND_CONFLICTED: facts.CommandConflicted,
    facts.COMMAND_SKIPPED: facts.CommandSkipped,
}


@dataclass(init=False, eq=False, repr=False)  # never compared nor printed; __init__ by hand
class RecordStage(BatchReadingStage):
    """Records each command's outcome on its run and moves the run on."""

    name: ClassVar[str] = STAGE
    deps: StageDeps
    store: WorkflowStore

    def __init__(self, deps: StageDeps, store: WorkflowStore) -> None:
        self.deps = deps
        self.store = store
        self.__post_init__()

    def reads(self, body: str) -> SnapshotRequest | None:
        fact: Fact[Payload] = read_fact(body, _OUTCOMES)  # claim-checked: raises, read alone
        self._parsed[body] = fact
        return _request(fact.envelope, cast(OutcomeFact, fact.payload), self.deps.id_salt)

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        try:
            fact: Fact[Payload] = self.parsed(body) or read_fact(body, _OUTCOMES, self.deps.claims)
            return retry_on_conflict(
                lambda: self._attempt(fact.envelope, cast(OutcomeFact, fact.payload)),
                exhausted=f"run {fact.envelope.run_id} changed {COMMIT_ATTEMPTS} times under record",
            )
        except MalformedInput as error:
            return self.reject(error, body, message_id)

    def _attempt(self, incoming: Envelope, fact: OutcomeFact) -> StageResult | None:
        command = fact.command
        denied = isinstance(fact, facts.CommandDenied)
        read = _request(incoming, fact, self.deps.id_salt)
        producers = list(read.proofs)
        snapshot = self.read(read)
        if snapshot.entry is not None:
            return publish(self.deps, Outcome.DUPLICATE, incoming, snapshot.entry.outputs)
        if denied:
            require_recorded(snapshot, incoming, producers)
        else:
            _require_authorized(snapshot, incoming, command, incoming.payload.get("command"))
        now = self.deps.clock.now()
        state = snapshot.state
        if state is None or state.terminal or command.id not in state.pending:
            reason = (
                "no such run"
                if state is None
                else f"the run is {state.status.value}"
                if state.terminal
                else f"command {command.id} is not pending in step {state.step_index}"
            )
            entry = validated(
                LogEntry,
                {
                    "stage": STAGE,
                    "input_id": incoming.id,
                    "input_type": incoming.type,
                    "outcome": Outcome.STALE,
                    "at": now,
                    "version": 0 if state is None else state.version,
                    "summary": {"reason": reason, "command_id": command.id},
                },
            )
            return commit_then_publish(
                self.deps, self.store, log_only(entry, command.tenant_id, command.run_id), incoming
            )
        # An outcome that would move the run on needs its definition; denials, failures and unknown
        # outcomes end or pause the run whatever the deployment holds.
        moves_on = isinstance(fact, facts.CommandExecuted | facts.CommandSkipped)
        retired = why_retired(self.deps, state) if moves_on else None
        if retired is not None:
            ended = settle(state, status=Status.FAILED, reason=retired, now=now)
            new_state, outputs = ended, [self._ended(incoming, state.workflow, ended, now)]
            outcome, summary = Outcome.APPLIED, {"reason": retired}
        else:
            new_state, outputs, outcome, summary = self._transition(incoming, fact, state, now)
        entry = validated(
            LogEntry,
            {
                "stage": STAGE,
                "input_id": incoming.id,
                "input_type": incoming.type,
                "outcome": outcome,
                "at": now,
                "version": new_state.version,
                "outputs": tuple(outputs),
                "summary": {
                    "command_id": command.id,
                    "command_type": command.type,
                    "outcome_at": incoming.time.isoformat(),
                    **summary,
                },
            },
        )
        commit = Commit(
            entry=entry,
            tenant_id=command.tenant_id,
            run_id=command.run_id,
            expected_version=state.version,
            state=new_state,
        )
        return commit_then_publish(self.deps, self.store, commit, incoming)

    def _transition(
        self, incoming: Envelope, fact: OutcomeFact, state: WorkflowState, now: datetime
    ) -> tuple[WorkflowState, list[Envelope], Outcome, dict[str, Any]]:
        command = fact.command
        if isinstance(fact, facts.CommandDenied):
            settled = settle(state, status=Status.DENIED, reason=fact.verdict.reason, now=now)
            return (
                settled,
                [self._ended(incoming, state.workflow, settled, now)],
                Outcome.DENIED,
                {"reason": fact.verdict.reason},
            )
        if isinstance(fact, facts.CommandFailed | facts.CommandConflicted | facts.CommandSkipped):
            why = fact.error if isinstance(fact, facts.CommandFailed) else fact.reason
            settled = settle(state, status=Status.FAILED, reason=why, now=now)
            return (
                settled,
                [self._ended(incoming, state.workflow, settled, now)],
                Outcome.APPLIED,
                {"reason": why},
            )
        if isinstance(fact, facts.CommandOutcomeUnknown):
            paused = settle(state, status=Status.PAUSED, reason=fact.reason, now=now)
            review = pipeline_fact(
                incoming,
                stage=STAGE,
                type_name=facts.HUMAN_REVIEW_REQUIRED,
                time=now,
                version=paused.version,
                payload=facts.HumanReviewRequired(
                    reason=fact.reason, limit="outcome_unknown", spend={"steps": state.steps_taken}
                ),
            )
            return paused, [review], Outcome.PAUSED, {"reason": fact.reason}
        workflow = self.deps.catalog.workflow(state.workflow)
        advanced = record_result(state, command_id=command.id, result=fact.result, now=now)
        if advanced.pending:
            return advanced, [], Outcome.APPLIED, {"waiting_for": list(advanced.pending)}
        step = workflow.steps[state.step_on]
        try:
            payload = self._outcome_payload(step, workflow, advanced)
        except MalformedInput as error:
            settled = settle(state, status=Status.FAILED, reason=error.reason, now=now)
            return (
                settled,
                [self._ended(incoming, state.workflow, settled, now)],
                Outcome.APPLIED,
                {"reason": error.reason},
            )
        if step.final:
            advanced = advanced.model_copy(update={"status": Status.COMPLETED})
        outcome = incoming.follow(
            stage=STAGE,
            type=step.outcome,
            kind=Kind.EVENT,
            time=now,
            source=facts.WORKFLOW_SOURCE,
            depth=incoming.depth + 1,
            version=advanced.version,
            payload=payload,
        )
        outputs = [_marked_last(outcome) if step.final else outcome]
        if step.final:
            outputs.append(
                incoming.follow(
                    stage=STAGE,
                    index=1,
                    type=facts.WORKFLOW_COMPLETED,
                    kind=Kind.EVENT,
                    time=now,
                    source=facts.PIPELINE_SOURCE,
                    version=advanced.version,
                    payload=json_values(
                        facts.WorkflowCompleted(workflow=workflow.name, steps=advanced.steps_taken)
                    ),
                )
            )
        return advanced, outputs, Outcome.APPLIED, {"outcome": step.outcome, "status": advanced.status.value}

    @staticmethod
    def _outcome_payload(step: Step, workflow: Workflow, state: WorkflowState) -> dict[str, Any]:
        raw = (
            step.outcome_payload(state.results)
            if step.outcome_payload
            else next(iter(state.results.values()))
        )
        model = workflow.events[step.outcome].model
        try:
            return json_values(model.model_validate(dict(raw)))
        except ValidationError as error:
            raise MalformedInput.from_validation(error, model, prefix=f"{step.outcome}.") from None

    @staticmethod
    def _ended(incoming: Envelope, workflow: str, state: WorkflowState, now: datetime) -> Envelope:
        return pipeline_fact(
            incoming,
            stage=STAGE,
            type_name=facts.WORKFLOW_FAILED,
            time=now,
            version=state.version,
            payload=facts.WorkflowFailed(
                workflow=workflow, status=state.status.value, reason=state.reason or ""
            ),
        )


def _request(incoming: Envelope, fact: OutcomeFact, salt: str) -> SnapshotRequest:
    """What record reads for an outcome: a denial's proofs, or the command's recorded authorization."""
    command = fact.command
    if isinstance(fact, facts.CommandDenied):
        proofs = tuple(_deniers(incoming, command, salt))
        return SnapshotRequest(command.tenant_id, command.run_id, STAGE, incoming.id, proofs=proofs)
    return SnapshotRequest(command.tenant_id, command.run_id, STAGE, incoming.id, authorization=command.id)


def _deniers(incoming: Envelope, command: Envelope, salt: str) -> list[tuple[str, str]]:
    """Where a CommandDenied is recorded: authorize's verdict on the proposal, or the approval's entry
    (a person's rejection, or the expiry that cancelled it), under its salted id or, for an approval
    requested before ids were salted, the unsalted one."""
    approvals = dict.fromkeys((approval_id(command.id, salt), approval_id(command.id, "")))
    return [("authorize", incoming.causation_id or ""), *(("approval", found) for found in approvals)]


def _require_authorized(snapshot: Snapshot, incoming: Envelope, command: Envelope, carried: object) -> None:
    """Execute's outcomes are of a command whose authorization is recorded, and follow that very
    CommandAuthorized. A run started before authorizations were recorded is checked by id only.

    ``carried``: the command as the outcome's JSON holds it, which ``command`` was read from."""
    if snapshot.state is not None and snapshot.state.checks == LEGACY_CHECKS:
        return
    granted = snapshot.authorization
    if granted is None:
        raise NotRecorded(
            f"{incoming.type} for command {command.id}, whose authorization is not recorded", field="detail"
        )
    other_command = not _same_command(granted.command_digest, command, carried)
    if other_command or granted.fact_id != incoming.causation_id:
        raise NotRecorded(
            f"{incoming.type} for command {command.id} does not follow its recorded authorization "
            f"{granted.fact_id}",
            field="detail.payload.command" if other_command else "detail.causation_id",
        )


def _same_command(recorded: str, command: Envelope, carried: object) -> bool:
    """Whether ``command``'s content is the one whose digest was ``recorded`` (its ``fact_digest``).

    ``carried`` must be the JSON ``command`` was read from (the outcome's ``payload.command``). Carried as
    its authorization dumped it, that JSON's digest is the recorded one (the same values less the trace
    context, the same canonical text), and the command read from it dumps to it again: its own digest is
    that one too, with no dump made. Otherwise (carried in another form, or another command) the command is
    dumped and its digest compared, as it always was."""
    if isinstance(carried, dict) and content_digest(carried) == recorded:
        return True
    return fact_digest(command) == recorded


def _marked_last(outcome: Envelope) -> Envelope:
    """The run's last outcome, marked ``RUN_ENDED`` so that it is sent to no stage; unmarked where the mark
    would take its extensions past their bounds (it then goes to decide, which records it as it records
    any outcome no step follows)."""
    marked = {**outcome.extensions, RUN_ENDED: True}
    try:
        check_extensions(marked)
    except ExtensionProblem:
        return outcome
    return outcome.model_copy(update={"extensions": marked})
