"""execute: run an authorized command's tool exactly once per idempotency key, publish what happened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError
from pydantic import BaseModel, ValidationError

from intentbus import facts
from intentbus.definition import ClientProvider, RepeatSafety, Tool, ToolContext, ToolError
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.journal import Outcome
from intentbus.policy import Effect
from intentbus.ports import IdempotentRunner
from intentbus.registry import Payload
from intentbus.stages.common import Stage, StageDeps, StageResult, publish, quarantined, read_fact

STAGE = "execute"


@dataclass
class ExecuteStage(Stage):
    deps: StageDeps
    runner: IdempotentRunner
    clients: ClientProvider

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
            arguments = spec.model.model_validate(command.payload)
        except ValidationError as error:
            return quarantined(
                self.deps,
                STAGE,
                MalformedInput.from_validation(error, prefix="command.payload."),
                body,
                message_id,
            )
        except MalformedInput as error:
            return quarantined(self.deps, STAGE, error, body, message_id)

        attempt = _Attempt(self, fact.envelope, command, spec.tool, arguments)
        after_lapse = attempt.after_lapse if spec.tool.repeat_safety is RepeatSafety.RECONCILE else None
        output = Envelope.model_validate(self.runner.run(command, attempt.run, after_lapse))
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
    ran: bool = False

    @property
    def _context(self) -> ToolContext:
        return ToolContext(
            tenant_id=self.command.tenant_id,
            run_id=self.command.run_id,
            idempotency_key=str(self.command.idempotency_key),
            clients=self.stage.clients,
            settings=self.stage.deps.settings,
        )

    def run(self) -> dict[str, Any]:
        self.ran = True
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
        return self._output(
            facts.COMMAND_EXECUTED, facts.CommandExecuted(command=self.command, result=result)
        )

    def _after_unknown(self, error: Exception) -> dict[str, Any]:
        """A RECONCILE tool failed in a way that may have left its effect behind: check before any retry."""
        if self.tool.reconcile is None:
            reason = f"{self.tool.name} failed with its outcome unknown and cannot be reconciled: {error}"
            return self._output(
                facts.COMMAND_OUTCOME_UNKNOWN,
                facts.CommandOutcomeUnknown(command=self.command, reason=reason),
            )
        found = self.tool.reconcile(self.arguments, self._context)
        if found is None:
            raise error  # the effect did not happen: a retry is safe
        executed = facts.CommandExecuted(command=self.command, result=dict(found), reconciled=True)
        return self._output(facts.COMMAND_EXECUTED, executed)

    def after_lapse(self) -> dict[str, Any]:
        """An earlier attempt lapsed mid-way: ask the target whether the effect happened, never guess."""
        self.ran = True
        if self.tool.reconcile is None:
            reason = (
                f"an earlier attempt of {self.command.type} lapsed and {self.tool.name} cannot be reconciled"
            )
            return self._output(
                facts.COMMAND_OUTCOME_UNKNOWN,
                facts.CommandOutcomeUnknown(command=self.command, reason=reason),
            )
        found = self.tool.reconcile(self.arguments, self._context)
        if found is None:
            return self.run()
        executed = facts.CommandExecuted(command=self.command, result=dict(found), reconciled=True)
        return self._output(facts.COMMAND_EXECUTED, executed)

    def _output(self, fact_type: str, payload: Payload) -> dict[str, Any]:
        return self.incoming.follow(
            stage=STAGE,
            type=fact_type,
            kind=Kind.EVENT,
            time=self.stage.deps.clock.now(),
            source=facts.PIPELINE_SOURCE,
            payload=payload.model_dump(mode="json"),
        ).to_json_dict()
