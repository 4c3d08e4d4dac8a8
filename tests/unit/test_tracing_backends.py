"""The tracing seam in memory: choosing a backend, the trace context a record joins and the one a published
fact carries on, for the OpenTelemetry backend (the SDK's in-memory exporter) and the X-Ray one.

A whole workflow's trace over the real topology is tests/e2e/test_tracing.py; that choosing X-Ray loads no
OpenTelemetry module is tests/integration/test_tracing_cold_start.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from intentbus import spans, telemetry
from intentbus.adapters.eventbridge_bus import EventBridgeBus
from intentbus.catalog import Catalog
from intentbus.config import Settings
from intentbus.envelope import Envelope, Kind
from intentbus.errors import ConfigurationError, MalformedInput
from intentbus.handler import SqsStageHandler
from intentbus.otel_spans import OtelBackend, new_provider
from intentbus.stages.common import StageCore, StageResult, fact_digest
from intentbus.testing import InMemoryPipeline
from intentbus.trace_context import TraceParent
from tests.unit.test_telemetry import TENANT, TRACE, signup, sqs_record, workflow

PRODUCER = "00-5f3a1b2c0123456789abcdef01234567-00f067aa0ba902b7-01"
REQUIRED_ENV = {
    "WORKFLOW_TABLE": "t",
    "EVENT_BUS_NAME": "b",
    "QUARANTINE_QUEUE_URL": "q",
    "INTENTBUS_ENVIRONMENT": "dev",
    "INTENTBUS_WORKFLOWS": "w",
}


class CapturedPutEvents:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.entries.extend(Entries)
        return {"FailedEntryCount": 0, "Entries": [{"EventId": "e"} for _ in Entries]}


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exported = InMemorySpanExporter()
    previous = spans.use(OtelBackend(new_provider(exported, batched=False)))
    try:
        yield exported
    finally:
        spans.use(previous)


def handler_over(core: StageCore) -> SqsStageHandler:
    return SqsStageHandler(
        "validate",
        build=lambda runtime: core,
        logger=Logger(service="unit-otel"),
        tracer=Tracer(disabled=True, auto_patch=False),
        metrics=Metrics(service="unit-otel"),
        runtime=lambda: None,  # type: ignore[arg-type, return-value]
    )


def _envelope(**fields: Any) -> Envelope:
    return Envelope(
        id="evt-1",
        source="crm.example",
        type="SignupReceived",
        time=datetime(2026, 1, 1, tzinfo=UTC),
        kind=Kind.EVENT,
        tenant_id=TENANT,
        trace_id=TRACE,
        run_id="run-1",
        step_index=0,
        correlation_id="run-1",
        payload={"plan": "pro"},
        **fields,
    )


def hex_id(value: int, width: int) -> str:
    return format(value, f"0{width}x")


# ------------------------------------------------------------------------------------ configuration


def test_the_backend_is_x_ray_unless_the_environment_says_otherwise() -> None:
    assert Settings.from_env(REQUIRED_ENV).tracing_backend == "xray"
    assert Settings.from_env({**REQUIRED_ENV, "TRACING_BACKEND": ""}).tracing_backend == "xray"
    assert Settings.from_env({**REQUIRED_ENV, "TRACING_BACKEND": "otel"}).tracing_backend == "otel"
    assert Settings.from_env({**REQUIRED_ENV, "TRACING_BACKEND": "off"}).tracing_backend == "off"


def test_an_unknown_backend_is_one_clear_line() -> None:
    with pytest.raises(ConfigurationError) as raised:
        Settings.from_env({**REQUIRED_ENV, "TRACING_BACKEND": "zipkin"})
    assert str(raised.value) == "invalid or missing environment variables: TRACING_BACKEND"


# ------------------------------------------------------------------------------------ trace context


def test_a_traceparent_reads_and_writes_in_w3c_and_x_ray_form() -> None:
    context = TraceParent.parse(PRODUCER)
    assert context == TraceParent("5f3a1b2c0123456789abcdef01234567", "00f067aa0ba902b7", sampled=True)
    assert str(context) == PRODUCER
    header = context.xray_header()
    assert str(header) == "Root=1-5f3a1b2c-0123456789abcdef01234567;Parent=00f067aa0ba902b7;Sampled=1"
    assert TraceParent.from_xray(header) == context
    assert TraceParent.from_xray(telemetry.TraceHeader(root=header.root)) is None, "no parent, no span"


@pytest.mark.parametrize(
    "value",
    [
        "ff-5f3a1b2c0123456789abcdef01234567-00f067aa0ba902b7-01",  # version ff is invalid
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # all-zero trace id
        "00-5f3a1b2c0123456789abcdef01234567-0000000000000000-01",  # all-zero span id
        "00-5F3A1B2C0123456789ABCDEF01234567-00f067aa0ba902b7-01",  # upper case
        "00-5f3a1b2c0123456789abcdef01234567-00f067aa0ba902b7-01-extra",  # 00 has no more fields
        "00-5f3a1b2c-00f067aa0ba902b7-01",
        "",
        None,
        42,
    ],
)
def test_an_invalid_traceparent_is_no_context(value: object) -> None:
    assert TraceParent.parse(value) is None


def test_a_record_s_trace_context_is_read_from_its_envelope_before_any_stage_parses_it() -> None:
    body = signup(traceparent=PRODUCER, tracestate="vendor=1")
    assert spans.claimed_trace_context(body) == {"traceparent": PRODUCER, "tracestate": "vendor=1"}
    assert spans.claimed_trace_context(signup(traceparent="not-a-traceparent")) == {}
    assert spans.claimed_trace_context(signup()) == {}
    assert spans.claimed_trace_context("{not json") == {}
    assert spans.claimed_trace_context(None) == {}


def test_a_fact_s_digest_leaves_out_the_trace_context_its_publisher_stamps_on() -> None:
    recorded = _envelope()
    published = spans.with_context(
        recorded, TraceParent("5f3a1b2c0123456789abcdef01234567", "00f067aa0ba902b7")
    )
    assert fact_digest(published) == fact_digest(recorded)
    forged = published.model_copy(update={"payload": {"plan": "enterprise"}})
    assert fact_digest(forged) != fact_digest(recorded), "only the trace context is left out"


# ------------------------------------------------------------------------------------- OpenTelemetry


def test_the_first_hop_is_a_child_of_the_producer_s_traceparent(exporter: InMemorySpanExporter) -> None:
    pipeline = InMemoryPipeline(Catalog([workflow]))
    response = handler_over(pipeline.stages["validate"]).handle_batch(
        {"Records": [sqs_record("m-1", signup(traceparent=PRODUCER))]}, cast(LambdaContext, None)
    )

    assert response == {"batchItemFailures": []}
    (span,) = exporter.get_finished_spans()
    assert span.name == "process validate"
    assert span.kind is SpanKind.CONSUMER
    assert hex_id(span.context.trace_id, 32) == "5f3a1b2c0123456789abcdef01234567"
    assert span.parent is not None
    assert hex_id(span.parent.span_id, 16) == "00f067aa0ba902b7"
    assert span.parent.is_remote
    assert dict(span.attributes or {}) | {"messaging.message.id": "m-1"} == {
        "messaging.system": "aws_sqs",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": "validate",
        "messaging.message.id": "m-1",
        "intentbus.stage": "validate",
        "intentbus.outcome": "applied",
        "intentbus.tenant_id": TENANT,
        "intentbus.run_id": "run-signup-1",
        "intentbus.trace_id": TRACE,
        "intentbus.step_index": 0,
        "intentbus.kind": "event",
        "intentbus.version": 0,
        "intentbus.depth": 0,
        "intentbus.published": ("EventAccepted",),
        "cloudevents.event_id": "evt-signup-1",
        "cloudevents.event_type": "SignupReceived",
    }
    assert "ada@example.com" not in json.dumps(dict(span.attributes or {})), "no payload in a span"


def test_without_a_traceparent_the_record_joins_its_sqs_message_s_x_ray_trace(
    exporter: InMemorySpanExporter,
) -> None:
    header = "Root=1-6745a0b1-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"
    pipeline = InMemoryPipeline(Catalog([workflow]))
    handler_over(pipeline.stages["validate"]).handle_batch(
        {"Records": [sqs_record("m-1", signup(), trace_header=header)]}, cast(LambdaContext, None)
    )
    (span,) = exporter.get_finished_spans()
    assert hex_id(span.context.trace_id, 32) == "6745a0b10123456789abcdef01234567"
    assert span.parent is not None
    assert hex_id(span.parent.span_id, 16) == "53995c3f42cd8ad8"


def test_with_no_context_at_all_a_trace_starts_with_an_x_ray_compatible_id(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(telemetry.LAMBDA_TRACE_ENV, raising=False)
    pipeline = InMemoryPipeline(Catalog([workflow]))
    before = int(time.time())
    handler_over(pipeline.stages["validate"]).handle_batch(
        {"Records": [sqs_record("m-1", signup())]}, cast(LambdaContext, None)
    )
    (span,) = exporter.get_finished_spans()
    assert span.parent is None
    epoch = int(hex_id(span.context.trace_id, 32)[:8], 16)  # X-Ray reads the first 8 digits as the time
    assert before - 1 <= epoch <= int(time.time()) + 1


def test_a_failing_record_s_span_is_an_error_with_the_exception(exporter: InMemorySpanExporter) -> None:
    class Broken:
        def handle(self, body: str, message_id: str | None = None) -> StageResult:
            raise RuntimeError("the store is down")

        def reject(self, error: MalformedInput, body: str, message_id: str | None = None) -> StageResult:
            raise RuntimeError("the store is down")

        def bind(self, context: LambdaContext) -> None:
            return None

    handler = handler_over(Broken())
    with pytest.raises(Exception, match="All records failed"):
        handler.handle_batch({"Records": [sqs_record("m-1", signup())]}, cast(LambdaContext, None))
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["intentbus.outcome"] == "failed"
    assert [event.name for event in span.events] == ["exception"]


def test_a_publication_is_a_producer_span_whose_context_each_fact_carries(
    exporter: InMemorySpanExporter,
) -> None:
    client = CapturedPutEvents()
    bus = EventBridgeBus("pipeline-bus", client)  # type: ignore[arg-type]
    incoming = _envelope(traceparent=PRODUCER, tracestate="vendor=1")
    outputs = [
        incoming.follow(
            stage="validate",
            type=t,
            kind=Kind.EVENT,
            payload={},
            time=incoming.time,
            source="intentbus.pipeline",
            index=i,
        )
        for i, t in enumerate(("A", "B"))
    ]

    bus.publish(outputs)

    (send,) = exporter.get_finished_spans()
    assert send.name == "send pipeline-bus"
    assert send.kind is SpanKind.PRODUCER
    assert dict(send.attributes or {}) == {
        "messaging.system": "aws.eventbridge",
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.destination.name": "pipeline-bus",
        "messaging.batch.message_count": 2,
    }
    assert send.parent is not None, "outside a record (the approvals API): the facts' own context"
    assert hex_id(send.parent.span_id, 16) == "00f067aa0ba902b7"
    context = TraceParent(hex_id(send.context.trace_id, 32), hex_id(send.context.span_id, 16))
    for entry in client.entries:
        detail = json.loads(entry["Detail"])
        assert detail["traceparent"] == str(context)
        assert detail["tracestate"] == "vendor=1", "the producer's vendor state travels on"
        assert entry["TraceHeader"] == str(context.xray_header()), "AWS joins the same trace"


# -------------------------------------------------------------------------------------------- X-Ray


def test_outside_a_traced_invocation_x_ray_leaves_the_fact_s_context_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(telemetry.LAMBDA_TRACE_ENV, raising=False)
    client = CapturedPutEvents()
    previous = spans.use(spans.XRayBackend())
    try:
        EventBridgeBus("bus", client).publish([_envelope(traceparent=PRODUCER)])  # type: ignore[arg-type]
    finally:
        spans.use(previous)
    (entry,) = client.entries
    assert json.loads(entry["Detail"])["traceparent"] == PRODUCER
    assert entry["TraceHeader"] == f"Root={telemetry.xray_trace_id(TRACE)}"


def test_off_makes_no_span_and_changes_no_context() -> None:
    client = CapturedPutEvents()
    previous = spans.use(spans.OffBackend())
    try:
        EventBridgeBus("bus", client).publish([_envelope(traceparent=PRODUCER)])  # type: ignore[arg-type]
        with spans.active().record("validate", {}, None) as span:
            span.annotate({"stage": "validate"})
    finally:
        spans.use(previous)
    (entry,) = client.entries
    assert json.loads(entry["Detail"])["traceparent"] == PRODUCER
