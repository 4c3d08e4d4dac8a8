"""authorize: the policy, not the model, decides whether a proposed command may run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from intentbus import facts
from intentbus.definition import CommandSpec, Step, Workflow
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.frozen import Frozen, frozen_dataclass
from intentbus.ids import approval_id, input_identity
from intentbus.journal import Commit, LogEntry, Outcome
from intentbus.policy import Effect, Verdict
from intentbus.ports import SnapshotRequest, WorkflowStore
from intentbus.principals import canonical
from intentbus.stages.common import (
    COMMIT_ATTEMPTS,
    BatchReadingStage,
    Fact,
    StageDeps,
    StageResult,
    authorization_for,
    commit_then_publish,
    log_only,
    publish,
    read_fact,
    require_recorded,
    retry_on_conflict,
    typed_payload,
)
from intentbus.stages.retired import end_run, why_retired
from intentbus.state import Status, WorkflowState, begin_step, new_run

if TYPE_CHECKING:
    from intentbus.approval_record import Approval

STAGE = "authorize"
_PROPOSED = {facts.COMMAND_PROPOSED: facts.CommandProposed}
_Declared = tuple[Workflow, CommandSpec, BaseModel]
"""A command's workflow, its spec and its typed arguments."""


@frozen_dataclass(init=False, eq=False, repr=False)  # never compared nor printed; __init__ by hand
class _Turn(Frozen):
    """One proposed command with the run it is authorized against, as read."""

    proposed: Envelope
    fact: facts.CommandProposed
    workflow: Workflow
    state: WorkflowState
    """The run as it will be authorized: read, or started by this command."""
    is_new: bool
    read: WorkflowState | None
    """The run as read, whose version the write is conditioned on."""
    now: datetime
    resource_version: int | None = None
    """The resource's version as read with the run: execute runs the command only at this version."""

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        proposed: Envelope,
        fact: facts.CommandProposed,
        workflow: Workflow,
        state: WorkflowState,
        is_new: bool,
        read: WorkflowState | None,
        now: datetime,
        resource_version: int | None = None,
    ) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["proposed"] = proposed
        fields["fact"] = fact
        fields["workflow"] = workflow
        fields["state"] = state
        fields["is_new"] = is_new
        fields["read"] = read
        fields["now"] = now
        fields["resource_version"] = resource_version


@dataclass(init=False, eq=False, repr=False)  # never compared nor printed; __init__ by hand
class AuthorizeStage(BatchReadingStage):
    """Checks each proposed command against its workflow's policy and records the verdict."""

    name: ClassVar[str] = STAGE
    deps: StageDeps
    store: WorkflowStore

    def __init__(self, deps: StageDeps, store: WorkflowStore) -> None:
        self.deps = deps
        self.store = store
        self.__post_init__()

    def reads(self, body: str) -> SnapshotRequest | None:
        """The proposal, and the command as declared (kept for ``handle`` with the parse)."""
        fact: Fact[facts.CommandProposed] = read_fact(body, _PROPOSED)  # claim-checked: raises, read alone
        self._parsed[body] = (fact, None)
        proposed, command = fact.envelope, fact.payload.command
        if command.kind is not Kind.COMMAND:
            return None
        try:
            declared = self._declared(command)
        except MalformedInput:  # read without a resource (``_undeclared``)
            resource = None
        else:
            self._parsed[body] = (fact, declared)
            _, spec, arguments = declared
            resource = spec.resource(arguments) if spec.resource is not None else None
        proofs = tuple(_producers(proposed, fact.payload))
        return SnapshotRequest(command.tenant_id, command.run_id, STAGE, proposed.id, resource, proofs)

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        try:
            parsed: tuple[Fact[facts.CommandProposed], _Declared | None] | None = self.parsed(body)
            fact, declared = parsed or (read_fact(body, _PROPOSED, self.deps.claims), None)
            return retry_on_conflict(
                lambda: self._attempt(fact.envelope, fact.payload, declared),
                exhausted=f"run {fact.envelope.run_id} changed {COMMIT_ATTEMPTS} times under authorize",
            )
        except MalformedInput as error:
            return self.reject(error, body, message_id)

    def _attempt(
        self, proposed: Envelope, fact: facts.CommandProposed, declared: _Declared | None = None
    ) -> StageResult | None:
        """``declared``: the command's workflow, spec and arguments, if ``reads`` found them already."""
        command = fact.command
        if command.kind is not Kind.COMMAND:
            raise MalformedInput(
                f"{command.type!r} is a {command.kind.value}, not a command", field="command.kind"
            )
        try:
            workflow, spec, arguments = declared or self._declared(command)
        except MalformedInput as error:
            return self._undeclared(proposed, fact, error)
        resource = spec.resource(arguments) if spec.resource is not None else None
        producers = _producers(proposed, fact)
        snapshot = self.store.snapshot(
            command.tenant_id, command.run_id, STAGE, proposed.id, resource=resource, proofs=producers
        )
        if snapshot.entry is not None:
            return publish(self.deps, Outcome.DUPLICATE, proposed, snapshot.entry.outputs)
        # The proposal must be what decide (or, for a command sent directly, validate) recorded.
        require_recorded(snapshot, proposed, producers)
        retired = why_retired(self.deps, snapshot.state)
        if retired is not None:
            assert snapshot.state is not None
            return self._end(proposed, command, snapshot.state, retired)
        now = self.deps.clock.now()
        state, is_new = self._run_for(snapshot.state, command, workflow, now)
        if state is None:
            reason = self._why_stale(snapshot.state, command)
            entry = LogEntry(
                stage=STAGE,
                input_id=proposed.id,
                input_type=command.type,
                outcome=Outcome.STALE,
                at=now,
                version=0,
                summary={"reason": reason, "command_id": command.id},
            )
            return commit_then_publish(
                self.deps, self.store, log_only(entry, command.tenant_id, command.run_id), proposed
            )
        verdict = _outside_step(workflow, state, command, is_new) or workflow.policy.evaluate(
            command=command.type,
            payload=command.payload,
            tenant_id=command.tenant_id,
            environment=self.deps.environment,
        )
        if verdict.effect is not Effect.DENY:
            verdict = _outside_resources(workflow, spec, arguments, command.tenant_id) or verdict
        turn = _Turn(
            proposed=proposed,
            fact=fact,
            workflow=workflow,
            state=state,
            is_new=is_new,
            read=snapshot.state,
            now=now,
            resource_version=snapshot.resource_version,
        )
        return self._apply(turn, verdict)

    def _declared(self, command: Envelope) -> _Declared:
        """The command's workflow, its spec and its typed arguments; malformed if none declares it."""
        workflow = self.deps.catalog.owner(command.type)
        if workflow is None or command.type not in workflow.commands:
            raise MalformedInput(
                f"no workflow declares the command {command.type!r}", field="detail.payload.command.type"
            )
        spec = workflow.commands[command.type]
        return workflow, spec, typed_payload(spec.model, command, "detail.payload.command")

    def _undeclared(
        self, proposed: Envelope, fact: facts.CommandProposed, error: MalformedInput
    ) -> StageResult | None:
        """A command this deployment cannot even read: malformed input, unless the pipeline recorded it
        (then a redeploy changed the definitions under its run, which ends, or recorded stale)."""
        command = fact.command
        producers = _producers(proposed, fact)
        snapshot = self.store.snapshot(
            command.tenant_id, command.run_id, STAGE, proposed.id, proofs=producers
        )
        if snapshot.entry is not None:
            return publish(self.deps, Outcome.DUPLICATE, proposed, snapshot.entry.outputs)
        require_recorded(snapshot, proposed, producers)
        state = snapshot.state
        retired = why_retired(self.deps, state)
        if retired is not None:
            assert state is not None
            return self._end(proposed, command, state, retired)
        if state is not None and not state.terminal:
            raise error
        entry = LogEntry(
            stage=STAGE,
            input_id=proposed.id,
            input_type=command.type,
            outcome=Outcome.STALE,
            at=self.deps.clock.now(),
            version=0 if state is None else state.version,
            summary={"reason": f"{error.reason}: not authorized", "command_id": command.id},
        )
        return commit_then_publish(
            self.deps, self.store, log_only(entry, command.tenant_id, command.run_id), proposed
        )

    def _end(
        self, proposed: Envelope, command: Envelope, state: WorkflowState, reason: str
    ) -> StageResult | None:
        return end_run(
            self.deps,
            self.store,
            stage=STAGE,
            incoming=proposed,
            input_id=proposed.id,
            input_type=command.type,
            state=state,
            reason=reason,
        )

    @staticmethod
    def _run_for(
        state: WorkflowState | None, command: Envelope, workflow: Workflow, now: datetime
    ) -> tuple[WorkflowState | None, bool]:
        """The run the command belongs to; a command another system sent directly starts one."""
        if state is None:
            if command.type not in workflow.starts_on:
                return None, False
            base = new_run(
                tenant_id=command.tenant_id,
                run_id=command.run_id,
                workflow=workflow.name,
                definition_version=workflow.version,
                step_on=command.type,
                now=now,
            )
            started = begin_step(
                base,
                step_on=command.type,
                command_ids=(command.id,),
                tokens=0,
                depth=command.depth,
                now=now,
                is_new=True,
            )
            return started, True
        # A sibling of a command that waits for approval is still authorized on its own.
        if state.status not in (Status.RUNNING, Status.AWAITING_APPROVAL) or command.id not in state.pending:
            return None, False
        return state, False

    @staticmethod
    def _why_stale(state: WorkflowState | None, command: Envelope) -> str:
        if state is None:
            return f"no run {command.run_id} exists for {command.type}"
        if state.status not in (Status.RUNNING, Status.AWAITING_APPROVAL):
            return f"the run is {state.status.value}"
        return f"command {command.id} is not pending in step {state.step_index}"

    def _apply(self, turn: _Turn, verdict: Verdict) -> StageResult | None:
        command = turn.fact.command
        approval: Approval | None = None
        new_state: WorkflowState | None = turn.state if turn.is_new else None
        authorization = None
        if verdict.effect is Effect.ALLOW:
            fact_type, outcome = facts.COMMAND_AUTHORIZED, Outcome.APPLIED
            dumped = authorized_json(command, verdict, turn.resource_version)
        elif verdict.effect is Effect.DENY:
            fact_type, outcome = facts.COMMAND_DENIED, Outcome.DENIED
            dumped = denied_json(command, verdict)
        else:
            fact_type, outcome = facts.HUMAN_APPROVAL_REQUIRED, Outcome.WAITING
            approval, new_state = _approval(turn, self.deps)
            dumped = facts.HumanApprovalRequired(
                command=command,
                verdict=verdict,
                approval_id=approval.approval_id,
                expires_at=approval.expires_at,
            ).model_dump(mode="json")
        version = (new_state or turn.state).version
        output = turn.proposed.follow(
            stage=STAGE,
            type=fact_type,
            kind=Kind.EVENT,
            time=turn.now,
            source=facts.PIPELINE_SOURCE,
            version=version,
            payload=dumped,
        )
        if verdict.effect is Effect.ALLOW:
            authorization = authorization_for(
                output, command, turn.resource_version, by=STAGE, at=turn.now, dumped=dumped["command"]
            )
        entry = LogEntry(
            stage=STAGE,
            input_id=turn.proposed.id,
            input_type=command.type,
            outcome=outcome,
            at=turn.now,
            version=version,
            outputs=(output,),
            summary={
                "command_id": command.id,
                "verdict": dict(dumped["verdict"]),
                "reason": verdict.reason,
            },
        )
        commit = Commit(
            entry=entry,
            tenant_id=command.tenant_id,
            run_id=command.run_id,
            expected_version=None if turn.read is None else turn.read.version,
            state=new_state,
            create=turn.is_new,
            approval=approval,
            authorization=authorization,
        )
        return commit_then_publish(self.deps, self.store, commit, turn.proposed)


def authorized_json(command: Envelope, verdict: Verdict, resource_version: int | None) -> dict[str, Any]:
    """``facts.CommandAuthorized(command=..., verdict=..., resource_version=...).model_dump(mode="json")``:
    the same keys in the same order, made from the dumps of the validated models it would hold (validating
    them again would only copy them). Values of any other type are left to the model, as before."""
    if not (_plain(command, verdict) and (resource_version is None or type(resource_version) is int)):
        return facts.CommandAuthorized(
            command=command, verdict=verdict, resource_version=resource_version
        ).model_dump(mode="json")
    return {
        "command": command.to_json_dict(),
        "verdict": _verdict_json(verdict),
        "resource_version": resource_version,
    }


def denied_json(command: Envelope, verdict: Verdict) -> dict[str, Any]:
    """``facts.CommandDenied(command=..., verdict=...).model_dump(mode="json")``, as ``authorized_json``."""
    if not _plain(command, verdict):
        return facts.CommandDenied(command=command, verdict=verdict).model_dump(mode="json")
    return {"command": command.to_json_dict(), "verdict": _verdict_json(verdict)}


def _plain(command: Envelope, verdict: Verdict) -> bool:
    """Exactly the models the facts' fields declare (a subclass dumps its own fields, the fact's do not),
    the verdict's effect an ``Effect``."""
    return type(command) is Envelope and type(verdict) is Verdict and type(verdict.effect) is Effect


def _verdict_json(verdict: Verdict) -> dict[str, Any]:
    """``verdict.model_dump(mode="json")``: its effect's value and its two texts."""
    return {"effect": verdict.effect.value, "rule": verdict.rule, "reason": verdict.reason}


def _producers(proposed: Envelope, fact: facts.CommandProposed) -> list[tuple[str, str]]:
    """Where a CommandProposed is recorded: decide's entry for the accepted event it answers (an agent
    proposed it), or validate's entry for a command another system sent (no agent; by its identity, by
    its id before that). The fact must match the entry exactly, its ``agent`` included, so reading only
    the entries of the producer it names accepts nothing more; each entry not read saves a read unit."""
    command = fact.command
    if fact.agent is not None:
        return [("decide", proposed.causation_id or "")]
    identity = input_identity(command.tenant_id, command.source, command.id)
    return [("validate", identity), ("validate", command.id)]


def _outside_step(
    workflow: Workflow, state: WorkflowState, command: Envelope, is_new: bool
) -> Verdict | None:
    """A command its step does not offer, or of another step, is denied whatever the policy says."""
    step = workflow.steps.get(state.step_on)
    if step is None or not offers(workflow, step, command.type):
        return Verdict(
            effect=Effect.DENY,
            rule="step-tools",
            reason=f"the step on {state.step_on} does not offer {command.type}",
        )
    if not is_new and command.step_index != state.step_index:
        return Verdict(
            effect=Effect.DENY,
            rule="step-tools",
            reason=f"the command is for step {command.step_index}; the run is at step {state.step_index}",
        )
    return None


def offers(workflow: Workflow, step: Step, name: str) -> bool:
    """``name in workflow.offered(step)``, without making the step's offer for each command."""
    return name in workflow.commands and (step.tools is None or name in step.tools)


def _outside_resources(
    workflow: Workflow, spec: CommandSpec, arguments: BaseModel, tenant_id: str
) -> Verdict | None:
    for resource in spec.touches(arguments):
        if not workflow.allows_resource(tenant_id, resource):
            return Verdict(
                effect=Effect.DENY,
                rule="tenant-resources",
                reason=f"tenant {tenant_id} may not touch {resource} in {workflow.name}",
            )
    return None


def proposers(fact: facts.CommandProposed, roles: dict[str, str]) -> tuple[str, ...]:
    """Who proposed, as principals: decide's role for an agent's proposal; for a command another
    system sent, validate's role and the producer bound to its source (``ProducerBindings``)."""
    found = [roles.get("decide")] if fact.agent is not None else [roles.get("validate"), fact.producer]
    return tuple(canonical(principal) for principal in found if principal)


def _approval(turn: _Turn, deps: StageDeps) -> tuple[Approval, WorkflowState]:
    """A pending approval that expires by the workflow's timeout, and the run waiting for it."""
    from intentbus.approval_record import Approval  # created only for a command that needs a person

    command = turn.fact.command
    approval = Approval(
        approval_id=approval_id(command.id, deps.id_salt),
        tenant_id=command.tenant_id,
        run_id=command.run_id,
        workflow=turn.workflow.name,
        command=command,
        proposed_at_version=turn.state.version,
        proposed_by=turn.fact.agent,
        proposers=proposers(turn.fact, deps.pipeline_roles),
        rationale=turn.fact.rationale,
        evidence=dict(turn.fact.evidence),
        confidence=turn.fact.confidence,
        requested_at=turn.now,
        expires_at=turn.now + turn.workflow.approval_timeout,
        resource_version=turn.resource_version,
    )
    waiting = turn.state.model_copy(
        update={
            "status": Status.AWAITING_APPROVAL,
            "awaiting_approval": (*turn.state.awaiting_approval, command.id),
            "updated_at": turn.now,
            "version": turn.state.version if turn.is_new else turn.state.version + 1,
        }
    )
    return approval, waiting
