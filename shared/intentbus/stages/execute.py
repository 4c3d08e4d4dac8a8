"""execute: run an authorized command's tool exactly once per idempotency key, publish what happened."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError
from pydantic import BaseModel

from intentbus import facts
from intentbus.definition import ClientProvider, RepeatSafety, Tool, ToolContext, ToolError, Workflow
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput, NotRecorded
from intentbus.journal import Outcome
from intentbus.policy import Effect
from intentbus.ports import (
    Claim,
    ClaimStatus,
    ExecutionGuard,
    IdempotentRunner,
    KeyHeldByAnotherCommand,
    OutcomeInDoubt,
)
from intentbus.registry import Payload
from intentbus.stages.common import (
    Stage,
    StageDeps,
    StageResult,
    authorization_digest,
    publish,
    read_fact,
    typed_payload,
)

STAGE = "execute"


@dataclass
class ExecuteStage(Stage):
    name: ClassVar[str] = STAGE
    deps: StageDeps
    runner: IdempotentRunner
    clients: ClientProvider
    guard: ExecutionGuard

    def bind(self, context: LambdaContext) -> None:
        self.runner.bind(context)

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        try:
            fact = read_fact(body, {facts.COMMAND_AUTHORIZED: facts.CommandAuthorized})
            command = fact.payload.command
            if fact.payload.verdict.effect is not Effect.ALLOW or command.kind is not Kind.COMMAND:
                raise MalformedInput(
                    f"CommandAuthorized for a {command.kind.value} "
                    f"with a {fact.payload.verdict.effect.value} verdict",
                    field="detail.payload.verdict",
                )
            spec = self.deps.catalog.command(command.type)
            if spec is None or command.idempotency_key is None:
                raise MalformedInput(
                    f"{command.type!r} is not a registered command with an idempotency key", field="command"
                )
            arguments = typed_payload(spec.model, command, "command")
        except MalformedInput as error:
            return self.reject(error, body, message_id)

        resource = spec.resource(arguments) if spec.resource is not None else None
        workflow = self.deps.catalog.owner(command.type)
        assert workflow is not None, "a registered command has an owning workflow"
        attempt = _Attempt(
            self,
            fact.envelope,
            command,
            spec.tool,
            arguments,
            resource,
            fact.payload.resource_version,
            workflow,
        )
        after_lapse = attempt.after_lapse if spec.tool.repeat_safety is RepeatSafety.RECONCILE else None
        try:
            output = Envelope.model_validate(self.runner.run(command, attempt.run, after_lapse))
        except KeyHeldByAnotherCommand:
            forged = NotRecorded(
                f"idempotency key {command.idempotency_key} of tenant {command.tenant_id} belongs to another "
                "command",
                field="detail.payload.command",
            )
            return self.reject(forged, body, message_id)
        except NotRecorded as error:  # raised inside the runner, so no result is stored for the key
            return self.reject(error, body, message_id)
        return publish(
            self.deps, Outcome.APPLIED if attempt.ran else Outcome.DUPLICATE, fact.envelope, (output,)
        )


@dataclass
class _Attempt:
    """One execution of a command's tool; its answer is stored by the idempotent runner."""

    stage: ExecuteStage
    incoming: Envelope
    command: Envelope
    tool: Tool
    arguments: BaseModel
    resource: str | None
    seen_version: int | None
    workflow: Workflow
    ran: bool = False

    @property
    def _context(self) -> ToolContext:
        return ToolContext(
            tenant_id=self.command.tenant_id,
            run_id=self.command.run_id,
            idempotency_key=str(self.command.idempotency_key),
            clients=self.stage.clients,
            settings=self.stage.deps.settings,
            allows=functools.partial(self.workflow.allows_resource, self.command.tenant_id),
        )

    def run(self) -> dict[str, Any]:
        self.ran = True
        refused = self._claim()
        if refused is not None:
            return refused
        try:
            result = dict(self.tool.run(self.arguments, self._context))
        except ToolError as error:
            if not error.retryable:
                return self._output(
                    facts.COMMAND_FAILED, facts.CommandFailed(command=self.command, error=str(error))
                )
            if self.tool.repeat_safety is RepeatSafety.RECONCILE:
                return self._after_unknown(error)
            raise
        except (BotoCoreError, OSError) as error:
            # The request may have reached the target before the answer was lost.
            if self.tool.repeat_safety is RepeatSafety.RECONCILE:
                return self._after_unknown(error)
            raise
        except Exception as error:
            if self.tool.repeat_safety is RepeatSafety.RECONCILE:
                raise OutcomeInDoubt(
                    f"{self.tool.name} raised {error!r}; it may have taken effect"
                ) from error
            raise
        return self._output(
            facts.COMMAND_EXECUTED, facts.CommandExecuted(command=self.command, result=result)
        )

    def _claim(self) -> dict[str, Any] | None:
        """The guard's one write before the tool: ``None`` if it may run, else the fact saying why not.

        A fact whose authorization the record does not hold is refused (``NotRecorded``), never run."""
        claim = self._guarded(authorization_digest(self.incoming.id, self.command, self.seen_version))
        if claim.status is ClaimStatus.NOT_AUTHORIZED and self.stage.guard.predates_authorizations(
            self.command.tenant_id, self.command.run_id
        ):
            claim = self._guarded(None)  # a run started before authorizations were recorded
        if claim.status is ClaimStatus.NOT_AUTHORIZED:
            raise NotRecorded(
                f"no authorization of command {self.command.id} matching this {self.incoming.type} is "
                f"recorded for run {self.command.run_id} of tenant {self.command.tenant_id}",
                field="detail.payload",
            )
        if claim.status is ClaimStatus.RUN_ENDED:
            reason = f"the run had ended ({claim.run_status}) before {self.command.type} could run: not run"
            return self._output(
                facts.COMMAND_SKIPPED, facts.CommandSkipped(command=self.command, reason=reason)
            )
        if claim.status is ClaimStatus.CONFLICT:
            assert self.resource is not None
            seen = self.seen_version or 0
            reason = (
                f"{self.resource} was changed by {claim.holder or 'another command'} after this command "
                f"was authorized at its version {seen}: not run"
            )
            conflicted = facts.CommandConflicted(
                command=self.command,
                resource=self.resource,
                authorized_at_version=seen,
                holder=claim.holder,
                reason=reason,
            )
            return self._output(facts.COMMAND_CONFLICTED, conflicted)
        return None

    def _guarded(self, authorization: str | None) -> Claim:
        return self.stage.guard.claim(
            tenant_id=self.command.tenant_id,
            run_id=self.command.run_id,
            command_id=self.command.id,
            resource=self.resource,
            seen_version=self.seen_version,
            authorization=authorization,
            now=self.stage.deps.clock.now(),
        )

    def _after_unknown(self, error: Exception) -> dict[str, Any]:
        """A RECONCILE tool failed in a way that may have left its effect behind: check before any retry."""
        if self.tool.reconcile is None:
            reason = f"{self.tool.name} failed with its outcome unknown and cannot be reconciled: {error}"
            return self._output(
                facts.COMMAND_OUTCOME_UNKNOWN,
                facts.CommandOutcomeUnknown(command=self.command, reason=reason),
            )
        found = self._reconcile()
        if found is None:
            raise error  # the effect did not happen: a retry is safe
        executed = facts.CommandExecuted(command=self.command, result=dict(found), reconciled=True)
        return self._output(facts.COMMAND_EXECUTED, executed)

    def after_lapse(self) -> dict[str, Any]:
        """An earlier attempt lapsed mid-way: ask the target whether the effect happened, never guess.

        The guard is asked first all the same: the lapsed attempt may have been a forged fact whose
        refusal could not release its record, and a forgery is refused, never reconciled."""
        self.ran = True
        self._claim()  # raises NotRecorded; a run that ended since is still reconciled
        if self.tool.reconcile is None:
            reason = (
                f"an earlier attempt of {self.command.type} lapsed and {self.tool.name} cannot be reconciled"
            )
            return self._output(
                facts.COMMAND_OUTCOME_UNKNOWN,
                facts.CommandOutcomeUnknown(command=self.command, reason=reason),
            )
        found = self._reconcile()
        if found is None:
            return self.run()
        executed = facts.CommandExecuted(command=self.command, result=dict(found), reconciled=True)
        return self._output(facts.COMMAND_EXECUTED, executed)

    def _reconcile(self) -> Mapping[str, Any] | None:
        """The tool's check; if the check itself fails, the doubt stays recorded for the next attempt."""
        assert self.tool.reconcile is not None
        try:
            return self.tool.reconcile(self.arguments, self._context)
        except Exception as error:
            raise OutcomeInDoubt(f"reconciling {self.tool.name} failed: {error!r}") from error

    def _output(self, fact_type: str, payload: Payload) -> dict[str, Any]:
        return self.incoming.follow(
            stage=STAGE,
            type=fact_type,
            kind=Kind.EVENT,
            time=self.stage.deps.clock.now(),
            source=facts.PIPELINE_SOURCE,
            payload=payload.model_dump(mode="json"),
        ).to_json_dict()
