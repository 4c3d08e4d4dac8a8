"""Kafka and RabbitMQ input through validate's own boundary: same schema, dedup, tenant binding, quarantine.

Each record becomes the EventBridge event the bus would have delivered (its ``detail`` the body, its
``source`` the body's, or the channel's only source), and ``ValidateStage.admit`` decides it with a
``BrokerSender``: the channel's binding (intentbus.broker_bindings), never a header, says which tenants
and sources it may carry. A source reserved for the pipeline is refused before that.

Failure handling fits both mappings. A record that cannot be accepted is quarantined with the reason and
the record as delivered; so is one whose processing raised something other than an infrastructure error
(a bug must not block a partition or a queue). Only an infrastructure error (AWS throttled or down, a
conflict to read again, a misconfigured function) fails the invocation: Amazon MQ then redelivers the
whole batch (it has no partial batch response) and Kafka retries it; the records already accepted are
found by validate's dedup and their facts published again with the same ids, which downstream dedups.

Publishing (intentbus.outbox): a batch's facts are held and sent together once every record is handled, in
as few PutEvents requests as AWS allows. A fact the bus did not accept fails the invocation, so the batch is
redelivered and validate's dedup publishes it again. When an infrastructure error stops the batch early,
the facts of the records already accepted are sent before the invocation fails, as they would have been
one by one: a redelivery that never comes (retries exhausted) must not leave an accepted input unpublished.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from intentbus import facts, spans, telemetry
from intentbus.broker_bindings import BrokerBindings, BrokerSender
from intentbus.broker_messages import BrokerMessage, messages
from intentbus.errors import ConfigurationError, MalformedInput, PublishError
from intentbus.inbound import parse_bus_event
from intentbus.record_log import RecordLog
from intentbus.runtime import Runtime
from intentbus.stages.common import ConcurrentUpdate, StageResult
from intentbus.stages.validate import ValidateStage

BINDINGS_VARIABLE = "INTENTBUS_BROKER_BINDINGS"
RESERVED_SOURCES = (facts.PIPELINE_SOURCE, facts.WORKFLOW_SOURCE)
INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (
    BotoCoreError,
    ClientError,
    PublishError,
    ConcurrentUpdate,
    ConfigurationError,
    ConnectionError,
    TimeoutError,
)
"""What fails the invocation, to be retried whole: nothing here is the record's fault."""
_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from intentbus.adapters.eventbridge_bus import EventBridgeBus


@dataclass
class BrokerIngress:
    """Admits Kafka and RabbitMQ records through validate, under their channel's binding."""

    validate: ValidateStage
    bindings: BrokerBindings
    region: str = ""

    def ingest(self, message: BrokerMessage) -> StageResult:
        """One record: accepted, a duplicate or quarantined; raises only an infrastructure error."""
        try:
            return self._ingest(message)
        except INFRASTRUCTURE_ERRORS:
            raise
        except Exception as error:
            _log.exception("record %s could not be processed; it is quarantined", message.message_id)
            reason = f"the record could not be processed: {type(error).__name__} (see the function's log)"
            return self.validate.reject(MalformedInput(reason), _kept(message, None), message.message_id)

    def _ingest(self, message: BrokerMessage) -> StageResult:
        try:
            detail = message.detail()
            event = self._bus_event(message, detail)
            bus_event = parse_bus_event(json.dumps(event, ensure_ascii=False))
        except MalformedInput as error:
            return self.validate.reject(error, _kept(message, None), message.message_id)
        sender = BrokerSender(self.bindings, message.channel)
        kept = functools.partial(_kept, message, event)  # made only if it is quarantined
        return self.validate.admit(bus_event, kept, message.message_id, sender)

    def _bus_event(self, message: BrokerMessage, detail: Mapping[str, Any]) -> dict[str, Any]:
        type_name = detail.get("type", detail.get("event_type"))
        if not isinstance(type_name, str) or not type_name:
            raise MalformedInput("the body names no type", field="type")
        binding = self.bindings.binding(message.channel)
        source = detail.get("source", None if binding is None else binding.only_source)
        if not isinstance(source, str) or not source:
            raise MalformedInput(
                f"the body names no source, and {message.channel} binds no single one", field="source"
            )
        if source in RESERVED_SOURCES:
            raise MalformedInput(f"source {source!r} is reserved for the pipeline", field="source")
        return {
            "version": "0",
            "id": message.message_id,
            "detail-type": type_name,
            "source": source,
            "account": "",
            "time": message.time.isoformat(),
            "region": self.region,
            "resources": [str(message.channel)],
            "detail": dict(detail),
        }


def _kept(message: BrokerMessage, event: Mapping[str, Any] | None) -> str:
    """What quarantine keeps: the event validate read (when there was one) and the record as delivered."""
    kept: dict[str, Any] = dict(event or {})
    kept.setdefault("id", message.message_id)
    kept.setdefault("resources", [str(message.channel)])
    kept["broker_record"] = dict(message.raw)
    if message.source_arn is not None:
        kept["broker_arn"] = message.source_arn
    return json.dumps(kept, ensure_ascii=False, default=str)


@contextmanager
def _untagged(key: Hashable) -> Iterator[None]:
    yield


def broker_ingress(runtime: Runtime) -> BrokerIngress:
    from intentbus.runtime import validate_stage

    bindings = BrokerBindings.parse(runtime.deps.settings.get(BINDINGS_VARIABLE, ""))
    region = runtime.deps.settings.get("AWS_REGION", "")
    return BrokerIngress(validate_stage(runtime), bindings, region)


@dataclass
class BrokerIngressHandler:
    """The Lambda body of a broker mapping's function: every record in order, one log line (the compact
    ``record processed`` line of intentbus.record_log, with its ``channel``) and one span
    (``## ingress record``, or ``process ingress``) each, EMF counts with ``stage`` ``ingress``. Returns
    an empty ``batchItemFailures``: a record never fails alone (an infrastructure error raises and fails
    the invocation, and so does a fact the bus did not accept). ``events``: the bus whose outbox holds the
    batch's facts until its end; by default the runtime's (without one, each record publishes at once)."""

    logger: Logger
    tracer: Tracer | None
    metrics: Metrics
    build: Any = broker_ingress
    runtime: Any = Runtime.from_env
    events: EventBridgeBus | None = None
    _core: BrokerIngress | None = field(default=None, init=False)
    _record_log: RecordLog | None = field(default=None, init=False)

    @property
    def core(self) -> BrokerIngress:
        if self._core is None:
            runtime = self.runtime()
            self._core = self.build(runtime)
            if self.events is None and isinstance(runtime, Runtime):
                self.events = runtime.events
        return self._core

    def handle(self, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        core = self.core
        core.validate.bind(context)
        self.metrics.add_dimension(name="stage", value="ingress")
        if self._record_log is None:
            self._record_log = RecordLog(self.logger)
        self._record_log.bind(getattr(context, "aws_request_id", None))
        try:
            with self._outbox() as held_for:
                outcomes = self._all(core, messages(event), held_for, self._record_log)
        finally:
            try:
                spans.active().flush()
            except Exception:  # telemetry never fails a batch
                self.logger.exception("could not flush the spans")
        self.logger.info("broker batch processed", extra={"outcomes": outcomes})
        return {"batchItemFailures": []}

    @contextmanager
    def _outbox(self) -> Iterator[Callable[[Hashable], AbstractContextManager[None]]]:
        """Holds the batch's facts and sends them at its end; yields what tags a record's facts as its own.

        Raises ``PublishError`` when a fact was not accepted. After an error, sends what is held and lets
        the error through."""
        bus = self.events
        if bus is None or bus.outbox is None:
            yield _untagged
            return
        with bus.outbox.batch() as outbox:
            try:
                yield outbox.record
            except BaseException:
                self._report(bus.send_held())
                raise
            not_accepted = self._report(bus.send_held())
            if not_accepted:
                raise PublishError(f"the facts of {not_accepted} records were not all accepted by the bus")

    def _report(self, failed: dict[Hashable, str]) -> int:
        for message_id, why in failed.items():
            self.logger.error(
                "record's facts not all published; the whole batch will be delivered again",
                extra={"stage": "ingress", "message_id": message_id, "reason": why},
            )
        telemetry.add_counts(self.metrics, [telemetry.FAILED] * len(failed))
        return len(failed)

    def _all(
        self,
        core: BrokerIngress,
        batch: Iterable[BrokerMessage],
        held_for: Callable[[Hashable], AbstractContextManager[None]],
        record_log: RecordLog,
    ) -> dict[str, int]:
        outcomes: dict[str, int] = {}
        for message in batch:
            started = time.perf_counter()
            keys = {"stage": "ingress", "channel": str(message.channel), "message_id": message.message_id}
            with (
                held_for(message.message_id),
                self.logger.append_context_keys(**keys),
                spans.active().record("ingress", message.raw, self.tracer) as span,
            ):
                try:
                    result = core.ingest(message)
                except Exception:
                    span.annotate({**keys, "outcome": telemetry.FAILED})
                    self.logger.exception("infrastructure error: the whole batch will be delivered again")
                    telemetry.add_counts(self.metrics, (telemetry.FAILED,))
                    raise
                ids = keys | {"outcome": result.outcome.value}
                if result.envelope is not None:
                    ids |= telemetry.envelope_ids(result.envelope)
                span.annotate(ids)
                milliseconds = (time.perf_counter() - started) * 1000
                record_log.processed({**ids, "reason": result.reason}, milliseconds)
            telemetry.add_counts(self.metrics, telemetry.outcome_counts("validate", result.outcome))
            telemetry.add_latency(self.metrics, milliseconds)
            outcomes[result.outcome.value] = outcomes.get(result.outcome.value, 0) + 1
        return outcomes
