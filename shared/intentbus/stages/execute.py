"""execute: run an authorized command's tool exactly once per idempotency key, publish what happened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from intentbus import facts
from intentbus.definition import ClientProvider, ToolContext, ToolError
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.journal import Outcome
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

        ran = False

        def work() -> dict[str, Any]:
            nonlocal ran
            ran = True
            context = ToolContext(
                tenant_id=command.tenant_id,
                run_id=command.run_id,
                idempotency_key=str(command.idempotency_key),
                clients=self.clients,
                settings=self.deps.settings,
            )
            payload: Payload
            try:
                result = dict(spec.tool.run(arguments, context))
                fact_type = facts.COMMAND_EXECUTED
                payload = facts.CommandExecuted(command=command, result=result)
            except ToolError as error:
                if error.retryable:
                    raise
                fact_type = facts.COMMAND_FAILED
                payload = facts.CommandFailed(command=command, error=str(error))
            output = fact.envelope.follow(
                stage=STAGE,
                type=fact_type,
                kind=Kind.EVENT,
                time=self.deps.clock.now(),
                source=facts.PIPELINE_SOURCE,
                payload=payload.model_dump(mode="json"),
            )
            return output.to_json_dict()

        output = Envelope.model_validate(self.runner.run(command, work))
        return publish(self.deps, Outcome.APPLIED if ran else Outcome.DUPLICATE, fact.envelope, (output,))
