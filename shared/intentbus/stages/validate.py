"""validate: schema, dedup by event id, quarantine with a reason; accepted events enter the pipeline.

Its durable write is the run's first log entry for the event, put only if absent: that entry is the
processed marker, so a redelivered event is found and its recorded output published again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Protocol

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from intentbus import facts
from intentbus.bus_event import EventBridgeModel
from intentbus.claims import resolved_detail
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.frozen import Frozen, frozen_dataclass
from intentbus.ids import derive_id, input_identity
from intentbus.inbound import normalize, parse_bus_event
from intentbus.journal import LogEntry, Outcome
from intentbus.model_shortcuts import json_values, validated
from intentbus.ports import SnapshotRequest, WorkflowStore
from intentbus.producers import ProducerBindings
from intentbus.registry import Payload, TypeRegistry
from intentbus.stages.common import (
    BatchReadingStage,
    ConcurrentUpdate,
    StageDeps,
    StageResult,
    commit_then_publish,
    log_only,
    publish,
    require_recorded,
)
from intentbus.stages.retired import end_run, why_snapshot_retired

STAGE = "validate"

_Read = tuple[EventBridgeModel, Envelope, MalformedInput | None, SnapshotRequest]
"""What ``reads`` made of an outcome event: its bus event, envelope, why it is unreadable, what it reads."""


class InputSender(Protocol):
    """Who delivered an input, as the deployment binds it to tenants: never what the input claims."""

    def refuses(self, *, source: str, tenant_id: str) -> str | None:
        """Why this sender may not send as ``source`` for ``tenant_id``; ``None`` when it may."""
        ...

    def principal(self, source: str) -> str | None:
        """The principal bound to send as ``source``, if the binding names one."""
        ...


@frozen_dataclass(init=False, eq=False, repr=False)  # never compared nor printed; __init__ by hand
class BusSender(Frozen):
    """An EventBridge producer: the event's account and source, bound by ``ProducerBindings``."""

    producers: ProducerBindings
    account: str
    own_account: str | None

    def __init__(self, producers: ProducerBindings, account: str, own_account: str | None) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["producers"] = producers
        fields["account"] = account
        fields["own_account"] = own_account

    def refuses(self, *, source: str, tenant_id: str) -> str | None:
        if self.producers.allows(
            account=self.account, source=source, tenant_id=tenant_id, own_account=self.own_account
        ):
            return None
        return self.producers.why_not(account=self.account, source=source, tenant_id=tenant_id)

    def principal(self, source: str) -> str | None:
        return self.producers.principal(account=self.account, source=source, own_account=self.own_account)


@dataclass(init=False, eq=False, repr=False)  # never compared nor printed; __init__ by hand
class ValidateStage(BatchReadingStage):
    """Checks each producer's event (schema, tenant binding, duplicates) and accepts it into the pipeline."""

    name: ClassVar[str] = STAGE
    deps: StageDeps
    store: WorkflowStore
    account: str | None = None
    """The stack's account, from the Lambda context: bindings without an account name it."""

    def __init__(self, deps: StageDeps, store: WorkflowStore, account: str | None = None) -> None:
        self.deps = deps
        self.store = store
        self.account = account
        self.__post_init__()

    def bind(self, context: LambdaContext) -> None:
        arn = getattr(context, "invoked_function_arn", "") or ""
        parts = arn.split(":")
        if len(parts) > 4 and parts[4]:
            self.account = parts[4]

    def reads(self, body: str) -> SnapshotRequest | None:
        """Only a workflow's outcome event is read (a producer's input is written blind, its parse kept for
        ``handle``); a claim-checked one raises here and reads alone."""
        bus_event = parse_bus_event(body)
        if bus_event.source != facts.WORKFLOW_SOURCE or not isinstance(bus_event.detail, dict):
            self._parsed[body] = bus_event
            return None
        resolved_detail(bus_event.detail, None)
        envelope, unreadable = _domain_input(bus_event, self.deps.catalog.types)
        request = _request_for(envelope)
        self._parsed[body] = (bus_event, envelope, unreadable, request)
        return request

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        parsed: _Read | EventBridgeModel | None = self.parsed(body)
        try:
            if isinstance(parsed, tuple):
                return self._domain_event(parsed[0], body, message_id, parsed[1:])
            bus_event = parse_bus_event(body) if parsed is None else parsed
            if bus_event.source == facts.WORKFLOW_SOURCE:
                return self._domain_event(bus_event, body, message_id)
        except MalformedInput as error:
            return self.reject(error, body, message_id)
        sender = BusSender(self.deps.producers, bus_event.account or "", self.account)
        return self.admit(bus_event, body, message_id, sender)

    def admit(
        self,
        bus_event: EventBridgeModel,
        body: str | Callable[[], str],
        message_id: str | None,
        sender: InputSender,
    ) -> StageResult:
        """A producer's input, as an EventBridge event: accepted, a duplicate, or quarantined with the
        reason (``body`` is what quarantine keeps, or makes it when needed). ``sender`` says whether whoever
        delivered it may speak for its tenant: the bus's producer bindings, or a broker's
        (intentbus.broker_bindings)."""
        try:
            envelope, _ = normalize(bus_event, self.deps.catalog.types)
            identity = input_identity(envelope.tenant_id, envelope.source, envelope.id)
            refused = sender.refuses(source=envelope.source, tenant_id=envelope.tenant_id)
            if refused is not None:
                raise MalformedInput(refused, field="tenant_id")
        except MalformedInput as error:
            return self.reject(error, body if isinstance(body, str) else body(), message_id)
        return self._accept(envelope, identity, sender.principal(envelope.source))

    def _domain_event(
        self,
        bus_event: EventBridgeModel,
        body: str,
        message_id: str | None,
        normalized: tuple[Envelope, MalformedInput | None, SnapshotRequest] | None = None,
    ) -> StageResult:
        """A workflow's outcome event that reached validate: one put on the ingress (a producer may not send
        that source: refused unless record published it), or one queued here before outcome events went
        straight to decide. Only the one record published is accepted.

        ``normalized``: what ``reads`` made of it (its envelope, why this deployment cannot read it, what
        it reads), when it did.

        One this deployment cannot read (a redeploy dropped or changed its workflow) is still checked
        against record's entry: if record published it, its run ends with the reason. Record published
        it, so a claim-checked payload is resolved first (a producer's never is)."""
        if normalized is None:
            if isinstance(bus_event.detail, dict):
                try:
                    detail = resolved_detail(bus_event.detail, self.deps.claims)
                except MalformedInput as error:
                    return self.reject(error, body, message_id)
                bus_event = bus_event.model_copy(update={"detail": detail})
            envelope, unreadable = _domain_input(bus_event, self.deps.catalog.types)
            normalized = (envelope, unreadable, _request_for(envelope))
        envelope, unreadable, request = normalized
        identity = request.input_id
        snapshot = self.read(request)
        if snapshot.entry is not None:
            return publish(self.deps, Outcome.DUPLICATE, envelope, snapshot.entry.outputs)
        try:
            require_recorded(snapshot, envelope, request.proofs)
        except MalformedInput as error:
            return self.reject(error, body, message_id)
        retired = why_snapshot_retired(self.deps, snapshot)
        if retired is not None:
            assert snapshot.state is not None
            ended = end_run(
                self.deps,
                self.store,
                stage=STAGE,
                incoming=envelope,
                input_id=identity,
                input_type=envelope.type,
                state=snapshot.state,
                reason=retired,
            )
            if ended is None:
                raise ConcurrentUpdate(f"run {envelope.run_id} changed under validate")
            return ended
        if unreadable is not None:
            return self.reject(unreadable, body, message_id)
        return self._accept(envelope, identity)

    def _accept(self, envelope: Envelope, identity: str, producer: str | None = None) -> StageResult:
        now = self.deps.clock.now()
        output = self._accepted(envelope, identity, now, producer)
        entry = validated(
            LogEntry,
            {
                "stage": STAGE,
                "input_id": identity,
                "input_type": envelope.type,
                "outcome": Outcome.APPLIED,
                "at": now,
                "version": envelope.version,
                "outputs": (output,),
                "summary": {"source": envelope.source, "kind": envelope.kind.value, "event_id": envelope.id},
            },
        )
        result = commit_then_publish(
            self.deps, self.store, log_only(entry, envelope.tenant_id, envelope.run_id), envelope
        )
        assert result is not None, "a log-only commit has no version to conflict on"
        return result

    @staticmethod
    def _accepted(envelope: Envelope, identity: str, now: datetime, producer: str | None) -> Envelope:
        """A command sent directly by another system is a proposal (by the producer bound to its source,
        when the binding names one); an event is a fact to decide on.

        Its id is derived from the input's identity, so every id the pipeline derives for this input
        differs from those of another tenant's or another source's input with the same id."""
        payload: Payload
        if envelope.kind is Kind.COMMAND:
            payload = validated(
                facts.CommandProposed,
                {"command": envelope, "decision_id": envelope.id, "agent": None, "producer": producer},
            )
            fact_type = facts.COMMAND_PROPOSED
        else:
            payload = validated(facts.EventAccepted, {"event": envelope})
            fact_type = facts.EVENT_ACCEPTED
        return envelope.follow(
            stage=STAGE,
            type=fact_type,
            kind=Kind.EVENT,
            payload=json_values(payload),
            time=now,
            source=facts.PIPELINE_SOURCE,
            output_id=derive_id(identity, STAGE, 0),
        )


def _domain_input(bus_event: EventBridgeModel, types: TypeRegistry) -> tuple[Envelope, MalformedInput | None]:
    """The outcome event's envelope, and why this deployment cannot read it (``None``: it can)."""
    try:
        envelope, _ = normalize(bus_event, types)
    except MalformedInput as error:
        return _as_published(bus_event, error), error
    return envelope, None


def _request_for(envelope: Envelope) -> SnapshotRequest:
    """What an outcome event reads: its own entry (its identity as validate's input) and where it is
    recorded, record's entry for the outcome it follows."""
    identity = input_identity(envelope.tenant_id, envelope.source, envelope.id)
    proofs = (("record", envelope.causation_id or ""),)
    return SnapshotRequest(envelope.tenant_id, envelope.run_id, STAGE, identity, proofs=proofs)


def _as_published(bus_event: EventBridgeModel, unreadable: MalformedInput) -> Envelope:
    """The domain event as record published it (its detail is the envelope), or the original error."""
    try:
        return Envelope.model_validate(bus_event.detail)
    except ValidationError:
        raise unreadable from None
