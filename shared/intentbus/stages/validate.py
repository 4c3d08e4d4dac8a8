"""validate: schema, dedup by event id, quarantine with a reason; accepted events enter the pipeline.

Its durable write is the run's first log entry for the event, put only if absent: that entry is the
processed marker, so a redelivered event is found and its recorded output published again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from intentbus import facts
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.inbound import normalize, parse_bus_event
from intentbus.journal import LogEntry, Outcome
from intentbus.ports import WorkflowStore
from intentbus.registry import Payload
from intentbus.stages.common import Stage, StageDeps, StageResult, commit_then_publish, log_only

STAGE = "validate"


@dataclass
class ValidateStage(Stage):
    name: ClassVar[str] = STAGE
    deps: StageDeps
    store: WorkflowStore

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        try:
            envelope, _ = normalize(parse_bus_event(body), self.deps.catalog.types)
        except MalformedInput as error:
            return self.reject(error, body, message_id)
        now = self.deps.clock.now()
        output = self._accepted(envelope, now)
        entry = LogEntry(
            stage=STAGE,
            input_id=envelope.id,
            input_type=envelope.type,
            outcome=Outcome.APPLIED,
            at=now,
            version=envelope.version,
            outputs=(output,),
            summary={"source": envelope.source, "kind": envelope.kind.value},
        )
        result = commit_then_publish(
            self.deps, self.store, log_only(entry, envelope.tenant_id, envelope.run_id), envelope
        )
        assert result is not None, "a log-only commit has no version to conflict on"
        return result

    @staticmethod
    def _accepted(envelope: Envelope, now: datetime) -> Envelope:
        """A command sent directly by another system is a proposal; an event is a fact to decide on."""
        payload: Payload
        if envelope.kind is Kind.COMMAND:
            payload = facts.CommandProposed(command=envelope, decision_id=envelope.id, agent=None)
            fact_type = facts.COMMAND_PROPOSED
        else:
            payload = facts.EventAccepted(event=envelope)
            fact_type = facts.EVENT_ACCEPTED
        return envelope.follow(
            stage=STAGE,
            type=fact_type,
            kind=Kind.EVENT,
            payload=payload.model_dump(mode="json"),
            time=now,
            source=facts.PIPELINE_SOURCE,
        )
