"""execute: run an authorized command's tool exactly once per idempotency key, publish what happened.

A tool failure worth retrying (``ToolError(retryable=True)``, a throttled or 5xx AWS call, a lost
connection) is retried per the command's ``RetryPolicy``: attempt ``n`` is the message's
``ApproximateReceiveCount``; while attempts remain the stage raises ``RetryLater`` with the backoff, which
the handler turns into the message's visibility; the last failed attempt pauses the run for review
(``intentbus.failure_review``) and the message is done.

A command whose tool is ``ToolEffect.READ_ONLY`` and names no resource runs without the in-progress lock
where the runner can (``RunsReadsUnlocked``): the guard's check still comes first, and the first result
stored for the key is the one every delivery publishes. A read-only tool may then run more than once per
command (deliveries racing, a failure before the store); it changes nothing, so only its result counts.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel

from intentbus import facts, span_notes
from intentbus.backoff import visibility_seconds
from intentbus.claims import ClaimStore
from intentbus.definition import (
    ClientProvider,
    CommandSpec,
    RepeatSafety,
    Tool,
    ToolContext,
    ToolEffect,
    ToolError,
    Workflow,
)
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput, NotRecorded
from intentbus.execution_claim import Claim, ClaimRequest, ClaimStatus, MadeOutput
from intentbus.frozen import FrozenPlain
from intentbus.journal import Outcome
from intentbus.limits import bounded_result, cut
from intentbus.policy import Effect
from intentbus.ports import (
    ChecksAhead,
    ExecutionGuard,
    IdempotentRunner,
    KeyHeldByAnotherCommand,
    OutcomeInDoubt,
    RunsReadsUnlocked,
    WorkflowStore,
)
from intentbus.registry import Payload
from intentbus.retries import Delivery, RetryLater
from intentbus.stages.common import (
    Fact,
    Stage,
    StageDeps,
    StageResult,
    authorization_digest,
    publish,
    read_fact,
    typed_payload,
)
from intentbus.tools import tool_error

STAGE = "execute"


class ExecuteStage(Stage):  # never compared nor printed; a plain class (no dataclass to create)
    """Runs each authorized command's tool once, under the guard's claim, and publishes its outcome."""

    name: ClassVar[str] = STAGE
    deps: StageDeps
    runner: IdempotentRunner
    clients: ClientProvider
    guard: ExecutionGuard
    store: WorkflowStore | None
    """Where a run is paused when a command runs out of attempts; without one the failure propagates."""
    jitter: Callable[[], float]

    def __init__(  # noqa: PLR0917 - the signature of the dataclass it was
        self,
        deps: StageDeps,
        runner: IdempotentRunner,
        clients: ClientProvider,
        guard: ExecutionGuard,
        store: WorkflowStore | None = None,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.deps = deps
        self.runner = runner
        self.clients = clients
        self.guard = guard
        self.store = store
        self.jitter = jitter
        self._parsed: dict[str, tuple[_Read, ClaimRequest]] = {}
        """The batch's facts read ahead (``prefetch``), each with the claim its check was read for."""
        self._ahead: tuple[object, ChecksAhead | None] = (None, None)
        self._unlocked: tuple[object, RunsReadsUnlocked | None] = (None, None)

    def bind(self, context: LambdaContext) -> None:
        self.runner.bind(context)

    def prefetch(self, bodies: Sequence[str]) -> None:
        """Reads the batch's facts, each once (kept for ``handle``), and has the guard read ahead what
        their claims check, together. A body that cannot be read here (malformed, or its payload
        claim-checked) is read again, and rejected or read alone, in its turn."""
        self._parsed = {}
        requests: list[ClaimRequest] = []
        for body in bodies:
            try:
                read = self._read(body, None)
            except Exception:
                continue
            request = read.claim(self)
            self._parsed[body] = (read, request)
            requests.append(request)
        guard = self._checking_ahead()
        if guard is not None:
            guard.prefetch(requests)

    def end_batch(self) -> None:
        self._parsed = {}
        guard = self._checking_ahead()
        if guard is not None:
            guard.forget()

    # A runtime-checkable protocol's isinstance walks the protocol's members each time (~45k instructions,
    # ~10 µs): asked once per guard and runner object, not per record.
    def _checking_ahead(self) -> ChecksAhead | None:
        if self._ahead[0] is not self.guard:
            self._ahead = (self.guard, self.guard if isinstance(self.guard, ChecksAhead) else None)
        return self._ahead[1]

    def _unlocked_runner(self) -> RunsReadsUnlocked | None:
        if self._unlocked[0] is not self.runner:
            self._unlocked = (
                self.runner,
                self.runner if isinstance(self.runner, RunsReadsUnlocked) else None,
            )
        return self._unlocked[1]

    def claim_with_guard(self, request: ClaimRequest) -> Claim:
        """The guard's claim for ``request``: handed over as it is where the guard takes a request
        (``DynamoExecutionGuard.claim_request``), else as ``ExecutionGuard.claim``'s arguments."""
        by_request = getattr(self.guard, "claim_request", None)
        if by_request is not None:
            claimed: Claim = by_request(request)
            return claimed
        return self.guard.claim(**request.arguments())

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        return self.handle_delivery(body, message_id, Delivery())

    def handle_delivery(self, body: str, message_id: str | None, delivery: Delivery) -> StageResult:
        parsed = self._parsed.pop(body, None)
        try:
            read = self._read(body, self.deps.claims) if parsed is None else parsed[0]
        except MalformedInput as error:
            return self.reject(error, body, message_id)
        fact, command = read.fact, read.fact.payload.command
        if read.declared is None:
            return self._not_run(read, body, message_id)
        spec, workflow, arguments = read.declared

        span_notes.note(
            {
                span_notes.TOOL: spec.tool.name,
                span_notes.COMMAND_TYPE: command.type,
                span_notes.ATTEMPT: delivery.receive_count,
            }
        )
        if parsed is None:
            claim = read.claim(self)
        else:  # the request the batch's check was read for, claimed now
            claim = parsed[1]
            claim.now = self.deps.clock.now()
        attempt = _Attempt(
            self,
            fact.envelope,
            command,
            spec.tool,
            arguments,
            read.resource,
            fact.payload.resource_version,
            workflow,
            claim,
            read.dumped,
        )
        after_lapse = attempt.after_lapse if spec.tool.repeat_safety is RepeatSafety.RECONCILE else None
        unlocked = self._unlocked_runner()
        try:
            if spec.tool.effect is ToolEffect.READ_ONLY and read.resource is None and unlocked is not None:
                answer = unlocked.run_read_only(command, attempt.run, after_lapse, claim, read.dumped)
            else:
                answer = self.runner.run(command, attempt.run, after_lapse, claim, read.dumped)
            output = attempt.output_of(answer)
        except (ToolError, ClientError, BotoCoreError, OSError) as error:
            if not _retryable(error):
                raise
            return self._retry(fact.envelope, spec, error, delivery)
        except KeyHeldByAnotherCommand:
            return self.reject(_key_held(command), body, message_id)
        except NotRecorded as error:  # raised inside the runner, so no result is stored for the key
            return self.reject(error, body, message_id)
        applied = attempt.made is not None and answer is attempt.made  # else a stored result won
        return publish(self.deps, Outcome.APPLIED if applied else Outcome.DUPLICATE, fact.envelope, (output,))

    def _read(self, body: str, claims: ClaimStore | None) -> _Read:
        """The fact in ``body`` and what its command will claim; ``MalformedInput`` if it is not an allowed
        command's CommandAuthorized (``claims=None``: a claim-checked payload is malformed too)."""
        fact = read_fact(body, {facts.COMMAND_AUTHORIZED: facts.CommandAuthorized}, claims)
        command = fact.payload.command
        if fact.payload.verdict.effect is not Effect.ALLOW or command.kind is not Kind.COMMAND:
            raise MalformedInput(
                f"CommandAuthorized for a {command.kind.value} "
                f"with a {fact.payload.verdict.effect.value} verdict",
                field="detail.payload.verdict",
            )
        if command.idempotency_key is None:
            raise MalformedInput(f"{command.type!r} has no idempotency key", field="command")
        dumped = command.to_json_dict()  # for the digest and the runner's key and payload hash both
        authorization = authorization_digest(
            fact.envelope.id, command, fact.payload.resource_version, dumped=dumped
        )
        spec = self.deps.catalog.command(command.type)
        workflow = self.deps.catalog.owner(command.type)
        if spec is None or workflow is None:
            why = f"no workflow in this deployment declares the command {command.type!r}"
            return _Read(fact, authorization, dumped, not_declared=why)
        try:
            arguments = typed_payload(spec.model, command, "command")
        except MalformedInput as problem:
            definition = f"{workflow.name} v{workflow.version}"
            why = f"the command does not fit {command.type} of {definition}: {problem.reason}"
            return _Read(fact, authorization, dumped, not_declared=why)
        resource = spec.resource(arguments) if spec.resource is not None else None
        return _Read(fact, authorization, dumped, (spec, workflow, arguments), resource)

    def _retry(
        self, incoming: Envelope, spec: CommandSpec, error: Exception, delivery: Delivery
    ) -> StageResult:
        """Again after the policy's backoff while attempts remain; then the run pauses for review."""
        policy, attempt = spec.retry, delivery.receive_count
        if attempt < policy.max_attempts:
            delay = visibility_seconds(
                attempt, base=policy.base_seconds, cap=policy.cap_seconds, jitter=self.jitter
            )
            raise RetryLater(
                error, delay_seconds=delay, attempt=attempt, max_attempts=policy.max_attempts
            ) from error
        from intentbus.failure_review import Cause, Failure, pause_for_failure  # last attempt only

        failure = Failure.of(STAGE, error, attempt, Cause.RETRIES_EXHAUSTED)
        paused = None if self.store is None else pause_for_failure(self.deps, self.store, incoming, failure)
        if paused is None:
            raise error  # no running run to pause: the failure takes its course
        return paused

    def _not_run(self, read: _Read, body: str, message_id: str | None) -> StageResult:
        """A command this deployment has no tool for (a redeploy dropped or changed its workflow): once the
        guard finds its authorization recorded, it is skipped with the reason, so record ends the run."""
        incoming, command = read.fact.envelope, read.fact.payload.command
        made: list[tuple[dict[str, Any], Envelope]] = []

        def skip() -> dict[str, Any]:
            claim = _guarded_claim(self, incoming, command, read.claim(self))
            reason = f"{read.not_declared}: not run"
            if claim.status is ClaimStatus.RUN_ENDED:
                reason = f"the run had ended ({claim.run_status}) before {command.type} could run: not run"
            skipped = _follow(
                self,
                incoming,
                facts.COMMAND_SKIPPED,
                facts.CommandSkipped(command=command, reason=reason),
                read.dumped,
            )
            made.append((MadeOutput(skipped, json_payload=True), skipped))
            return made[-1][0]

        try:
            answer = self.runner.run(command, skip, dumped=read.dumped)
            output = _output_of(answer, *(made[-1] if made else (None, None)))
        except KeyHeldByAnotherCommand:
            return self.reject(_key_held(command), body, message_id)
        except NotRecorded as error:
            return self.reject(error, body, message_id)
        return publish(self.deps, Outcome.APPLIED if made else Outcome.DUPLICATE, incoming, (output,))


class _Read(FrozenPlain):  # never compared nor printed (equal only to itself): ``intentbus.frozen``
    """A CommandAuthorized as read from its body, with the authorization digest its claim checks."""

    fact: Fact[facts.CommandAuthorized]
    authorization: str
    dumped: dict[str, Any]
    """The command's ``to_json_dict``: the authorization digest's, and the runner's (never changed)."""
    declared: tuple[CommandSpec, Workflow, BaseModel] | None
    """The command's spec, its workflow and its arguments; ``None`` if this deployment cannot run it."""
    resource: str | None
    not_declared: str | None
    """Why this deployment cannot run the command (``declared`` is ``None``)."""

    def __init__(  # noqa: PLR0917 - the signature of the dataclass it was
        self,
        fact: Fact[facts.CommandAuthorized],
        authorization: str,
        dumped: dict[str, Any],
        declared: tuple[CommandSpec, Workflow, BaseModel] | None = None,
        resource: str | None = None,
        not_declared: str | None = None,
    ) -> None:
        set_field = object.__setattr__
        set_field(self, "fact", fact)
        set_field(self, "authorization", authorization)
        set_field(self, "dumped", dumped)
        set_field(self, "declared", declared)
        set_field(self, "resource", resource)
        set_field(self, "not_declared", not_declared)

    def claim(self, stage: ExecuteStage) -> ClaimRequest:
        """The guard's claim for the command (no resource, no definition if it is not declared), now."""
        workflow = None if self.declared is None else self.declared[1]
        return ClaimRequest(
            tenant_id=self.fact.payload.command.tenant_id,
            run_id=self.fact.payload.command.run_id,
            command_id=self.fact.payload.command.id,
            resource=self.resource,
            seen_version=self.fact.payload.resource_version,
            authorization=self.authorization,
            now=stage.deps.clock.now(),
            definition=None if workflow is None else (workflow.name, workflow.version),
        )


class _Attempt:  # never compared nor printed; a plain class (no dataclass to create)
    """One execution of a command's tool; its answer is stored by the idempotent runner."""

    claim_request: ClaimRequest
    """The runner may have made it with its in-progress record."""
    dumped: dict[str, Any]
    """``command.to_json_dict()``, as read (``_Read.dumped``)."""
    made: dict[str, Any] | None
    """The last output this attempt made: what the runner returns if it stored it (or ran it locked)."""
    made_fact: Envelope | None
    """``made`` as the envelope it was dumped from."""

    def __init__(  # noqa: PLR0917 - the signature of the dataclass it was
        self,
        stage: ExecuteStage,
        incoming: Envelope,
        command: Envelope,
        tool: Tool,
        arguments: BaseModel,
        resource: str | None,
        seen_version: int | None,
        workflow: Workflow,
        claim_request: ClaimRequest,
        dumped: dict[str, Any],
        made: dict[str, Any] | None = None,
        made_fact: Envelope | None = None,
    ) -> None:
        self.stage = stage
        self.incoming = incoming
        self.command = command
        self.tool = tool
        self.arguments = arguments
        self.resource = resource
        self.seen_version = seen_version
        self.workflow = workflow
        self.claim_request = claim_request
        self.dumped = dumped
        self.made = made
        self.made_fact = made_fact

    def output_of(self, answer: dict[str, Any]) -> Envelope:
        """The runner's answer as an envelope: the one this attempt made, if the answer is it."""
        return _output_of(answer, self.made, self.made_fact)

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
        refused = self._claim()
        if refused is not None:
            return refused
        try:
            result = bounded_result(dict(self.tool.run(self.arguments, self._context)))
        except ToolError as error:
            if not error.retryable:
                return self._output(
                    facts.COMMAND_FAILED, facts.CommandFailed(command=self.command, error=cut(str(error)))
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
        claim = _guarded_claim(self.stage, self.incoming, self.command, self.claim_request)
        if claim.status is ClaimStatus.RETIRED:
            run_workflow, run_version = claim.run_definition or (self.workflow.name, "?")
            mine = f"{self.workflow.name} v{self.workflow.version}"
            why = self.stage.deps.catalog.retired(run_workflow, run_version) or (
                f"the run is a {run_workflow} v{run_version} run, not {mine}"
            )
            return self._output(
                facts.COMMAND_SKIPPED, facts.CommandSkipped(command=self.command, reason=f"{why}: not run")
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
        executed = facts.CommandExecuted(
            command=self.command, result=bounded_result(dict(found)), reconciled=True
        )
        return self._output(facts.COMMAND_EXECUTED, executed)

    def after_lapse(self) -> dict[str, Any]:
        """An earlier attempt lapsed mid-way: ask the target whether the effect happened, never guess.

        The guard is asked first all the same: the lapsed attempt may have been a forged fact whose
        refusal could not release its record, and a forgery is refused, never reconciled."""
        try:
            self._claim()  # raises NotRecorded; a run that ended since is still reconciled
        except (ClientError, BotoCoreError, OSError) as error:
            # The earlier attempt's effect is still unknown: the record must stay in progress, or the
            # next attempt finds the key free and runs the tool blindly a second time.
            raise OutcomeInDoubt(f"the guard's claim failed after a lapsed attempt: {error!r}") from error
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
        executed = facts.CommandExecuted(
            command=self.command, result=bounded_result(dict(found)), reconciled=True
        )
        return self._output(facts.COMMAND_EXECUTED, executed)

    def _reconcile(self) -> Mapping[str, Any] | None:
        """The tool's check; if the check itself fails, the doubt stays recorded for the next attempt."""
        assert self.tool.reconcile is not None
        try:
            return self.tool.reconcile(self.arguments, self._context)
        except Exception as error:
            raise OutcomeInDoubt(f"reconciling {self.tool.name} failed: {error!r}") from error

    def _output(self, fact_type: str, payload: Payload) -> dict[str, Any]:
        self.made_fact = _follow(self.stage, self.incoming, fact_type, payload, self.dumped)
        self.made = MadeOutput(self.made_fact, json_payload=True)  # ``payload_json``'s
        return self.made


def _guarded_claim(
    stage: ExecuteStage, incoming: Envelope, command: Envelope, request: ClaimRequest
) -> Claim:
    """The guard's claim (the one the runner made, if it did); a fact whose authorization the record
    does not hold raises ``NotRecorded``. A run that predates recorded authorizations is checked by id."""
    claimed = request.take() or stage.claim_with_guard(request)
    if claimed.status is ClaimStatus.NOT_AUTHORIZED and stage.guard.predates_authorizations(
        command.tenant_id, command.run_id
    ):
        claimed = stage.guard.claim(**{**request.arguments(), "authorization": None})
    if claimed.status is ClaimStatus.NOT_AUTHORIZED:
        raise NotRecorded(
            f"no authorization of command {command.id} matching this {incoming.type} is "
            f"recorded for run {command.run_id} of tenant {command.tenant_id}",
            field="detail",
        )
    return claimed


def _follow(
    stage: ExecuteStage, incoming: Envelope, fact_type: str, payload: Payload, dumped: dict[str, Any]
) -> Envelope:
    """``dumped``: the payload's command as ``to_json_dict`` dumps it."""
    return incoming.follow(
        stage=STAGE,
        type=fact_type,
        kind=Kind.EVENT,
        time=stage.deps.clock.now(),
        source=facts.PIPELINE_SOURCE,
        payload=payload_json(payload, dumped),
    )


def payload_json(payload: Payload, dumped: dict[str, Any]) -> dict[str, Any]:
    """``payload.model_dump(mode="json")`` with its command (the first field of every fact execute makes)
    given as ``dumped``, its ``to_json_dict``, rather than dumped once more."""
    return {"command": dumped, **payload.model_dump(mode="json", exclude={"command"})}


def _output_of(answer: dict[str, Any], made: dict[str, Any] | None, fact: Envelope | None) -> Envelope:
    """The envelope to publish for the runner's answer. The answer this delivery made, ``made`` (the runner
    returns it as it was made, the very object), is published as ``fact``, the envelope it was dumped from,
    not validated again; a stored result read back is validated."""
    if fact is not None and answer is made:
        return fact
    return Envelope.model_validate(answer)


def _retryable(error: Exception) -> bool:
    if isinstance(error, ToolError):
        return error.retryable
    if isinstance(error, ClientError):
        return tool_error(error, "the tool").retryable
    return True  # the connection failed or timed out: worth another attempt


def _key_held(command: Envelope) -> NotRecorded:
    return NotRecorded(
        f"idempotency key {command.idempotency_key} of tenant {command.tenant_id} belongs to another command",
        field="detail.payload.command",
    )
