"""The body every stage's Lambda handler shares: Powertools' partial batch processing over the core.

A record that raises is reported in ``batchItemFailures`` and retried alone by SQS; malformed
records never raise, they are quarantined by the core, and so is a record with no body (or one that
is not a string), with field ``body``. A record without a ``messageId`` (Lambda always sends one)
is processed like any other; should it fail, it cannot be named in ``batchItemFailures``, so the
invocation fails and SQS retries the whole batch rather than drop it. The core is built on the
first invocation and kept for warm ones.

Repeated failures (intentbus.retries, intentbus.failure_review): a core that raises ``RetryLater`` gets
the message back after its wait (ChangeMessageVisibility on the record's receipt handle, then a batch
item failure); a record that fails on its queue's last receive (``ApproximateReceiveCount >=
INTENTBUS_MAX_RECEIVE_COUNT``) pauses its run for human review with the error instead of leaving it to
the DLQ, and the message is done (the pause holds it for the desk's retry). validate's input is not yet a
run: it goes to its DLQ as before.

Publishing (intentbus.outbox): the facts a batch's records publish are held and sent together once every
record has been handled, in as few PutEvents requests as AWS allows; a record whose facts were not all
accepted is then reported in ``batchItemFailures`` (its durable write is done, so its redelivery finds it
and publishes the same facts again, DESIGN rule 1).

Reads (intentbus.batch_reads): a stage that reads a snapshot per record has its batch's snapshots read
together first, in one call, each record then served its own (execute: its guard's checks); if that
read fails, each reads alone.

Telemetry per record (see intentbus.spans and intentbus.telemetry): one span per record by the backend
``TRACING_BACKEND`` chooses (an X-Ray subsegment ``## <stage> record``, or an OpenTelemetry CONSUMER
span ``process <stage>``) with stage, outcome, tenant, run, event type and trace id, and what the stage
noted (intentbus.span_notes: the model's tokens and latency at decide, the tool and attempt at
execute); one compact ``record processed`` line at INFO (intentbus.record_log), and every other line
the handler writes of a record carries its trace, run, event, tenant and stage ids; EMF
metrics with a ``stage`` dimension time it (``latency``, one value per record, the batch's added together
at its end) and count it (processed, per outcome, failed: once per batch, with the batch's totals).
Payloads are logged only at DEBUG, redacted by the type registry; a reason never holds a model's output
(a refused answer's is kept in the quarantine record's ``raw_output``,
see intentbus.model_output) nor the input a validation error refused (intentbus.validation_errors).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Hashable, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeGuard, runtime_checkable

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.base import FailureResponse
from aws_lambda_powertools.utilities.batch.exceptions import ExceptionInfo
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus import coldstart, span_notes, spans, telemetry
from intentbus.errors import IntentbusError, MalformedInput, PublishError
from intentbus.record_log import RecordLog
from intentbus.registry import WITHHELD, TypeRegistry
from intentbus.retries import Delivery, HandlesDeliveries, RetryLater, VisibilityPort
from intentbus.runtime import Runtime
from intentbus.stages.common import StageCore, StageResult
from intentbus.xray import traced, xray_tracer

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

    from intentbus.adapters.eventbridge_bus import EventBridgeBus


_NO_NOTES: nullcontext[dict[str, span_notes.Value]] = nullcontext({})
"""A record's notes where its span records nothing: none are collected, as ``note`` outside a scope does."""


@runtime_checkable
class ReadsAhead(Protocol):
    """A stage core that reads what its batch's records will read before they are handled: a
    ``BatchReadingStage``, or execute, whose guard reads the batch's checks together."""

    def prefetch(self, bodies: Sequence[str]) -> None: ...

    def end_batch(self) -> None: ...


class UnnamedRecordFailed(IntentbusError):
    """A record without a ``messageId`` failed: the whole batch is retried, since it cannot be listed."""

    code: ClassVar[str] = "unnamed_record_failed"


class _SqsBatchProcessor(BatchProcessor):
    def failure_handler(self, record: SQSRecord, exception: ExceptionInfo) -> FailureResponse:
        if not isinstance(record.raw_event.get("messageId"), str):
            raise UnnamedRecordFailed(
                "a record without a messageId failed; retrying the batch"
            ) from exception[1]
        return super().failure_handler(record, exception)


class SqsStageHandler:
    def __init__(
        self,
        stage: str,
        build: Callable[[Runtime], StageCore],
        *,
        logger: Logger,
        tracer: Tracer | None,
        metrics: Metrics,
        runtime: Callable[[], Runtime] = Runtime.from_env,
        types: TypeRegistry | None = None,
        visibility: VisibilityPort | None = None,
        events: EventBridgeBus | None = None,
    ) -> None:
        """``types`` says which payload fields are sensitive; by default the runtime's catalog's.
        ``visibility``: how a message's wait is set; by default SQS through the runtime's client.
        ``events``: the bus whose outbox holds a batch's facts until its end; by default the runtime's."""
        self.stage = stage
        self._build = build
        self._runtime = runtime
        self._built_on: Runtime | None = None
        self._visibility = visibility
        self._events_bus = events
        self._core: StageCore | None = None
        self._deliveries_of: StageCore | None = None
        self._deliveries = False
        self._types = types
        self._logger = logger
        self._tracer = tracer
        self._metrics = metrics
        self._processor = _SqsBatchProcessor(event_type=EventType.SQS)
        self._record_log = RecordLog(logger)
        self._counts = telemetry.BatchCounts()
        self._latencies = telemetry.BatchLatencies()
        self._logs_payloads = False

    @property
    def core(self) -> StageCore:
        if self._core is None:
            runtime = self._runtime()
            self._core = self._build(runtime)
            if isinstance(runtime, Runtime):
                self._built_on = runtime
                if self._types is None:
                    self._types = runtime.deps.catalog.types
        return self._core

    def handle_batch(self, event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
        self.core.bind(context)
        self._metrics.add_dimension(name="stage", value=self.stage)
        self._record_log.bind(getattr(context, "aws_request_id", None))
        self._logs_payloads = self._logger.log_level <= logging.DEBUG
        records = event.get("Records") if isinstance(event, dict) else None
        if not isinstance(records, list):
            raise ValueError("the event has no SQS Records list")
        bus = self._events()
        self._counts.clear()
        self._latencies.clear()
        reader = self._prefetch(records)
        try:
            # No context: Powertools would inspect the handler's signature every batch to pass it one.
            with self._processor(records, self._handle_record):
                if bus is None or bus.outbox is None:
                    self._processor.process()
                else:
                    with bus.outbox.batch():
                        self._processor.process()
                        self._fail_unpublished(records, bus.send_held())
            return self._processor.response()
        finally:
            if reader is not None:
                reader.end_batch()
            self._latencies.add_to(self._metrics)
            self._counts.add_to(self._metrics)
            try:
                spans.active().flush()
            except Exception:  # telemetry never fails a batch
                self._logger.exception("could not flush the spans")

    def _prefetch(self, records: list[Any]) -> ReadsAhead | None:
        """The batch's snapshots (execute: its guard's checks) read together before its records are
        handled one by one (intentbus.batch_reads); should that fail, each record reads its own."""
        core = self.core
        if not isinstance(core, ReadsAhead):
            return None
        bodies = [
            raw["body"] for raw in records if isinstance(raw, dict) and isinstance(raw.get("body"), str)
        ]
        try:
            core.prefetch(bodies)
        except Exception:
            self._logger.exception("could not read the batch's snapshots together; each record reads its own")
        return core

    def _events(self) -> EventBridgeBus | None:
        if self._events_bus is None and self._built_on is not None:
            self._events_bus = self._built_on.events
        return self._events_bus

    def _fail_unpublished(self, records: list[Any], failed: dict[Hashable, str]) -> None:
        """Records whose facts were not all accepted by PutEvents become batch item failures."""
        for raw in records:
            why = failed.get(id(raw))
            if why is None or not isinstance(raw, dict):
                continue
            self._logger.error(
                "record's facts not all published; SQS will retry it",
                extra={**self._claimed(raw), "reason": why},
            )
            self._counts.add((telemetry.FAILED,))
            error = PublishError(why)
            self._processor.failure_handler(SQSRecord(raw), (PublishError, error, None))

    def _handle_record(self, record: SQSRecord) -> str:
        raw = record.raw_event
        bus = self._events()
        if bus is None or bus.outbox is None:
            return self._handle(raw)
        with bus.outbox.record(id(raw)):
            return self._handle(raw)

    def _handle(self, raw: dict[str, Any]) -> str:
        message_id = raw.get("messageId")
        started = time.perf_counter()
        with (
            spans.active().record(self.stage, raw, self._tracer) as span,
            span_notes.collecting() if spans.recording(span) else _NO_NOTES as notes,
        ):
            attributes = raw.get("attributes")
            if isinstance(attributes, dict):
                span.metadata("aws_trace_header", attributes.get("AWSTraceHeader"))
            try:
                result = self._process(raw, message_id if isinstance(message_id, str) else None)
            except Exception:
                keys = self._claimed(raw)
                span.annotate({**keys, **notes, "outcome": telemetry.FAILED})
                self._logger.exception("record failed; SQS will retry it", extra=keys)
                self._counts.add((telemetry.FAILED,))
                self._latencies.add((time.perf_counter() - started) * 1000)
                raise
            envelope = result.envelope
            ids: dict[str, Any]
            if envelope is None:  # quarantined before its envelope was read: what the body claims
                ids = self._claimed(raw) | {"outcome": result.outcome.value}
            else:
                ids = {"stage": self.stage, "message_id": message_id, "outcome": result.outcome.value}
                ids |= telemetry.envelope_ids(envelope)
            if spans.recording(span):
                step = None if envelope is None else envelope.step_index
                span.annotate({**ids, **notes, "step_index": step})
                span.metadata("record", telemetry.record_metadata(result, message_id))
            milliseconds = (time.perf_counter() - started) * 1000
            line = {**ids, "correlation_id": None if envelope is None else envelope.correlation_id}
            if result.reason is not None:  # most records have none: the line leaves a None out anyway
                line["reason"] = result.reason
            line["published"] = [out.type for out in result.published]
            self._record_log.processed(line, milliseconds)
            if self._logs_payloads:
                self._logger.debug("record payloads", extra={**ids, **self._payloads(result)})
            self._counts.add(telemetry.outcome_counts(self.stage, result.outcome, forged=result.forged))
            self._latencies.add(milliseconds)
            return result.outcome.value

    def _claimed(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The keys of a record's lines before (or without) its envelope: the stage, its message id and the
        ids its body claims. Asked only when such a line is written: a handled record's come from its
        envelope."""
        return {
            "stage": self.stage,
            "message_id": raw.get("messageId"),
            **telemetry.claimed_ids(raw.get("body")),
        }

    def _process(self, raw: dict[str, Any], message_id: str | None) -> StageResult:
        runtime = self._built_on
        delivery = Delivery.of(raw, None if runtime is None else runtime.settings.intentbus_max_receive_count)
        try:
            return self._dispatch(raw, message_id, delivery)
        except RetryLater as retry:
            self._retry_later(raw, retry)
            raise
        except Exception as error:
            if not delivery.last:
                raise
            paused = self._pause_for_review(raw, error, delivery)
            if paused is None:
                raise
            return paused

    def _retry_later(self, raw: dict[str, Any], retry: RetryLater) -> None:
        """Sets the message's visibility to the retry's wait; should that fail, the queue's own applies."""
        arn, handle = raw.get("eventSourceARN"), raw.get("receiptHandle")
        port = self._visibility_port()
        if not isinstance(arn, str) or not isinstance(handle, str) or port is None:
            return
        try:
            port.delay(arn, handle, retry.delay_seconds)
        except Exception:
            self._logger.exception(
                "could not set the retry's visibility; the queue's timeout applies", extra=self._claimed(raw)
            )
            return
        self._logger.warning(
            "record retried later",
            extra={
                **self._claimed(raw),
                "attempt": retry.attempt,
                "max_attempts": retry.max_attempts,
                "delay_seconds": retry.delay_seconds,
            },
        )

    def _visibility_port(self) -> VisibilityPort | None:
        if self._visibility is None and self._built_on is not None:
            from intentbus.adapters.sqs_visibility import SqsVisibility

            self._visibility = SqsVisibility(self._built_on.clients.client("sqs"))
        return self._visibility

    def _pause_for_review(
        self, raw: dict[str, Any], error: Exception, delivery: Delivery
    ) -> StageResult | None:
        """On the last receive, the run pauses for review of the failure; ``None``: nothing to pause."""
        runtime, body = self._built_on, raw.get("body")
        if self.stage == "validate" or runtime is None or not isinstance(body, str):
            return None
        from intentbus.failure_review import Cause, Failure, pause_for_failure, pipeline_input  # cold start

        incoming = pipeline_input(body)
        if incoming is None:
            return None
        failure = Failure.of(self.stage, error, delivery.receive_count, Cause.LAST_RECEIVE)
        try:
            return pause_for_failure(runtime.deps, runtime.store, incoming, failure)
        except Exception:
            self._logger.exception(
                "could not pause the run for review; the message goes to the DLQ", extra=self._claimed(raw)
            )
            return None

    def _dispatch(self, raw: dict[str, Any], message_id: str | None, delivery: Delivery) -> StageResult:
        body = raw.get("body")
        core = self.core
        if isinstance(body, str):
            if self._counts_deliveries(core):
                return core.handle_delivery(body, message_id, delivery)
            return core.handle(body, message_id)
        if "body" not in raw:
            return core.reject(MalformedInput("the SQS record has no body", field="body"), "", message_id)
        kept = json.dumps(body, default=repr)
        return core.reject(
            MalformedInput(f"the SQS record's body is {type(body).__name__}, not a string", field="body"),
            kept,
            message_id,
        )

    def _counts_deliveries(self, core: StageCore) -> TypeGuard[HandlesDeliveries]:
        """``isinstance`` against a Protocol walks its members on every call: asked once per core."""
        if self._deliveries_of is not core:
            self._deliveries_of, self._deliveries = core, isinstance(core, HandlesDeliveries)
        return self._deliveries

    def _payloads(self, result: StageResult) -> dict[str, Any]:
        """The record's and its outputs' payloads, with every field the type registry marks sensitive
        redacted (a type it does not know is withheld whole)."""

        def redact(type_name: str, payload: dict[str, Any]) -> Any:
            return WITHHELD if self._types is None else self._types.redact(type_name, payload)

        envelope = result.envelope
        return {
            "payload": None if envelope is None else redact(envelope.type, envelope.payload),
            "published_payloads": [
                {"id": out.id, "type": out.type, "payload": redact(out.type, out.payload)}
                for out in result.published
            ],
        }


def stage_entry(
    stage: str, build: Callable[[Runtime], StageCore]
) -> Callable[[dict[str, Any], LambdaContext], PartialItemFailureResponse]:
    """A stage's Lambda handler: Powertools' Logger and Metrics (and Tracer, see ``xray_tracer``) around
    ``SqsStageHandler``."""
    logger, metrics, tracer = Logger(), Metrics(), xray_tracer()
    handler = SqsStageHandler(stage, build, logger=logger, tracer=tracer, metrics=metrics)

    def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
        return handler.handle_batch(event, context)

    entry = traced(metrics.log_metrics(lambda_handler), tracer)
    decorated: Callable[[dict[str, Any], LambdaContext], PartialItemFailureResponse]
    decorated = logger.inject_lambda_context(clear_state=True)(entry)
    return coldstart.first_call_building(decorated)
