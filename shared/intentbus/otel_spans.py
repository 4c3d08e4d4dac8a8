"""The OpenTelemetry backend of the tracing seam (``TRACING_BACKEND=otel``); imported only when chosen.

Spans follow the messaging semantic conventions: one CONSUMER span ``process <stage>`` per SQS record
(``messaging.system=aws_sqs``, ``messaging.operation.type=process``) and one PRODUCER span
``send <bus>`` per PutEvents publication (``messaging.operation.type=send``); the record's ids as
``intentbus.*`` and ``cloudevents.*`` attributes, the model's tokens as ``gen_ai.usage.*``.

A record's span is the child of, in this order: the ``traceparent`` its envelope carries (the
publishing stage's PRODUCER span, or a producer's own span on the first hop), the SQS message's
``AWSTraceHeader``, the invocation's X-Ray context (``_X_AMZN_TRACE_ID``); else it starts a trace.
Trace ids come from ``AwsXRayIdGenerator`` and each PutEvents entry's ``TraceHeader`` is the publish
span's context in X-Ray's form, so X-Ray (through the ADOT collector or any OTLP collector that
exports to it) shows the Lambda service segments and these spans as one trace.

The provider is the process's global one when something already set it up (the ADOT layer's
auto-instrumentation, a test); otherwise one exporting over OTLP/HTTP to
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the collector's), batched and
flushed at the end of every invocation.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.aws import AwsXRayPropagator
from opentelemetry.sdk.extension.aws.trace import AwsXRayIdGenerator
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from intentbus import spans, telemetry
from intentbus.trace_context import TraceParent

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

    from intentbus.envelope import Envelope

INSTRUMENTATION = "intentbus"
FLUSH_TIMEOUT_MS = 5_000
XRAY_HEADER = "X-Amzn-Trace-Id"

_ATTRIBUTE_OF = {
    "stage": "intentbus.stage",
    "outcome": "intentbus.outcome",
    "tenant_id": "intentbus.tenant_id",
    "run_id": "intentbus.run_id",
    "trace_id": "intentbus.trace_id",
    "event_type": "cloudevents.event_type",
    "event_id": "cloudevents.event_id",
    "message_id": "messaging.message.id",
    "step_index": "intentbus.step_index",
}
_RECORD_METADATA = {
    "causation_id": "intentbus.causation_id",
    "kind": "intentbus.kind",
    "version": "intentbus.version",
    "depth": "intentbus.depth",
    "reason": "intentbus.reason",
}

_w3c = TraceContextTextMapPropagator()
_xray = AwsXRayPropagator()


def new_provider(exporter: SpanExporter, *, batched: bool = True) -> TracerProvider:
    """A provider with X-Ray compatible trace ids that sends its spans to ``exporter``."""
    attributes: dict[str, str] = {"cloud.provider": "aws"}
    if not os.environ.get("OTEL_SERVICE_NAME") and os.environ.get("POWERTOOLS_SERVICE_NAME"):
        attributes["service.name"] = os.environ["POWERTOOLS_SERVICE_NAME"]
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        attributes["faas.name"] = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
    if os.environ.get("AWS_REGION"):
        attributes["cloud.region"] = os.environ["AWS_REGION"]
    provider = TracerProvider(id_generator=AwsXRayIdGenerator(), resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(exporter) if batched else SimpleSpanProcessor(exporter))
    return provider


class OtelBackend:
    name: spans.BackendName = "otel"

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer(INSTRUMENTATION)

    @classmethod
    def from_environment(cls) -> OtelBackend:
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider):
            return cls(current)
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider = new_provider(OTLPSpanExporter())
        trace.set_tracer_provider(provider)
        return cls(provider)

    @contextmanager
    def record(self, stage: str, raw: Mapping[str, Any], tracer: Tracer | None) -> Iterator[spans.RecordSpan]:
        attributes: dict[str, Any] = {
            "messaging.system": "aws_sqs",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "intentbus.stage": stage,
        }
        queue = _queue_name(raw.get("eventSourceARN"))
        if queue:
            attributes["messaging.destination.name"] = queue
        with self._tracer.start_as_current_span(
            f"process {stage}", context=_parent(raw), kind=SpanKind.CONSUMER, attributes=attributes
        ) as span:
            yield _RecordSpan(span)

    @contextmanager
    def publish(self, bus_name: str, envelopes: Sequence[Envelope]) -> Iterator[spans.Stamp]:
        attributes: dict[str, Any] = {
            "messaging.system": "aws.eventbridge",
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
            "messaging.destination.name": bus_name,
        }
        if len(envelopes) > 1:
            attributes["messaging.batch.message_count"] = len(envelopes)
        parent: Context | None = None  # the record's span, when a stage publishes
        outside_a_record = not trace.get_current_span().get_span_context().is_valid
        if outside_a_record and envelopes:  # the approvals API, the sweeps: the facts' own trace
            parent = _carried(envelopes[0].traceparent, envelopes[0].tracestate)
        with self._tracer.start_as_current_span(
            f"send {bus_name}", context=parent, kind=SpanKind.PRODUCER, attributes=attributes
        ):
            carrier: dict[str, str] = {}
            _w3c.inject(carrier)
            context = TraceParent.parse(carrier.get("traceparent"))

            def stamp(envelope: Envelope) -> tuple[Envelope, str]:
                if context is None:
                    return envelope, telemetry.trace_header(envelope.trace_id)
                stamped = spans.with_context(envelope, context, carrier.get("tracestate"))
                return stamped, str(context.xray_header())

            yield stamp
        if outside_a_record:  # no stage handler flushes at the end of such an invocation
            self.flush()

    def flush(self) -> None:
        self._provider.force_flush(FLUSH_TIMEOUT_MS)


class _RecordSpan:
    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def annotate(self, values: Mapping[str, Any]) -> None:
        for key, value in values.items():
            name = _ATTRIBUTE_OF.get(key, key if "." in key else None)
            if name is not None and isinstance(value, str | bool | int | float):
                self._span.set_attribute(name, value)
        if values.get("outcome") == telemetry.FAILED:
            self._span.set_status(Status(StatusCode.ERROR))

    def metadata(self, key: str, value: Any) -> None:
        if key != "record" or not isinstance(value, Mapping):
            return
        for field, name in _RECORD_METADATA.items():
            item = value.get(field)
            if isinstance(item, str | int):
                self._span.set_attribute(name, item)
        published = value.get("published")
        if isinstance(published, list):
            self._span.set_attribute("intentbus.published", [str(out.get("type")) for out in published])


def _parent(raw: Mapping[str, Any]) -> Context:
    carried = spans.claimed_trace_context(raw.get("body"))
    if carried:
        found = _carried(carried["traceparent"], carried.get("tracestate"))
        if found is not None:
            return found
    attributes = raw.get("attributes")
    headers = [attributes.get("AWSTraceHeader")] if isinstance(attributes, Mapping) else []
    headers.append(os.environ.get(telemetry.LAMBDA_TRACE_ENV))
    for header in headers:
        if isinstance(header, str) and header:
            context = _xray.extract({XRAY_HEADER: header})
            if trace.get_current_span(context).get_span_context().is_valid:
                return context
    return Context()  # a new trace


def _carried(traceparent: str | None, tracestate: str | None) -> Context | None:
    if not traceparent:
        return None
    carrier = {"traceparent": traceparent, **({"tracestate": tracestate} if tracestate else {})}
    context = _w3c.extract(carrier, context=Context())
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def _queue_name(arn: object) -> str | None:
    """``arn:aws:sqs:REGION:ACCOUNT:NAME`` -> NAME."""
    if not isinstance(arn, str) or not arn.startswith("arn:"):
        return None
    return arn.rsplit(":", 1)[-1] or None
