"""One trace per workflow over the real topology, for each tracing backend (``TracingBackend``).

X-Ray (the default): a PutEvents entry's TraceHeader becomes the SQS message's AWSTraceHeader, Lambda's
trace context of the next stage, and so on through all five stages. The segments are captured in memory
(intentbus_local.tracing); the logs and EMF metrics are read from each function's log, as from
CloudWatch Logs.

OpenTelemetry: the spans go to the SDK's in-memory exporter; a producer's ``traceparent`` makes the
first hop its child, and each stage's CONSUMER span is the child of the PRODUCER span that published
its input."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from intentbus import spans, telemetry
from intentbus.otel_spans import new_provider
from intentbus.trace_context import TraceParent
from intentbus_local import seed, tracing
from intentbus_local.cloud import LocalCloud

STAGES = ("validate", "decide", "authorize", "execute", "record")
TRACE_ID = "tr_incident_checkout_7"
ROOT = telemetry.xray_trace_id(TRACE_ID)
ENTRY_TYPE = "ServiceLatencyIncreased"
STEP = ["decide", "authorize", "execute", "record"]
RUN = ["validate", *STEP * 4]
"""The records of the run, in order: a workflow's outcome event goes from record straight to decide, but
the last, which ends the run and goes to no stage."""


@dataclass
class Traced:
    cloud: LocalCloud
    capture: tracing.Capture

    def __post_init__(self) -> None:
        self.entities = self.capture.entities()
        self.by_id = {str(entity["id"]): entity for entity in self.entities}
        self.stage_of_function = {
            self.cloud.topology.functions[f"{stage.capitalize()}Function"].name: stage for stage in STAGES
        }

    def records(self) -> list[dict[str, Any]]:
        """The per-record subsegments of the five stages, in the order they ran."""
        names = {f"## {stage} record" for stage in STAGES}
        found = [entity for entity in self.entities if entity.get("name") in names]
        return sorted(found, key=lambda entity: float(entity["start_time"]))

    def entry(self) -> dict[str, Any]:
        (entry,) = [r for r in self.records() if r["annotations"]["event_type"] == ENTRY_TYPE]
        return entry

    def function_of(self, entity: dict[str, Any]) -> dict[str, Any]:
        while entity.get("origin") != tracing.FUNCTION_ORIGIN:
            entity = self.by_id[str(entity["parent_id"])]
        return entity

    def children(self, entity: dict[str, Any]) -> list[dict[str, Any]]:
        return [child for child in self.entities if child.get("parent_id") == entity["id"]]

    def log_lines(self, stage: str) -> list[dict[str, Any]]:
        path = self.cloud.log_path(f"{stage.capitalize()}Function")
        return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def record_ids(entity: dict[str, Any]) -> dict[str, Any]:
    ids: dict[str, Any] = entity["metadata"][telemetry.NAMESPACE]["record"]
    return ids


def run_incident(tmp_path: Path, *, producer_joins: bool) -> Iterator[Traced]:
    with (
        tracing.capture() as captured,  # open before the first invocation: cold starts patch botocore
        LocalCloud(mode="server", logs_dir=tmp_path / "logs") as cloud,
    ):
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        event = {**seed.latency_event(), "trace_id": TRACE_ID}
        entry = {"Source": "monitoring.example", "DetailType": ENTRY_TYPE, "Detail": json.dumps(event)}
        if producer_joins:  # what a producer sends to run its event's first hop in the workflow's trace
            entry["TraceHeader"] = telemetry.trace_header(TRACE_ID)
        cloud.put_events([entry])
        assert cloud.run_until_idle(max_invocations=100).idle
        assert seed.desired_count(cloud.clients) == 4
        yield Traced(cloud, captured)


@pytest.fixture(scope="module")
def joined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traced]:
    yield from run_incident(tmp_path_factory.mktemp("joined"), producer_joins=True)


@pytest.fixture(scope="module")
def unjoined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traced]:
    yield from run_incident(tmp_path_factory.mktemp("unjoined"), producer_joins=False)


def test_the_incident_workflow_is_one_trace_across_all_five_stages(joined: Traced) -> None:
    records = joined.records()
    assert [r["annotations"]["stage"] for r in records] == RUN
    run_id = joined.entry()["annotations"]["run_id"]
    for record in records:
        annotations = record["annotations"]
        assert record["trace_id"] == ROOT
        assert record["name"] == f"## {annotations['stage']} record"
        assert annotations["trace_id"] == TRACE_ID
        assert annotations["run_id"] == run_id
        assert annotations["tenant_id"] == "org_enterprise_alpha"
        assert annotations["outcome"] == "applied"
        assert record_ids(record)["event_type"] == annotations["event_type"]
    assert Counter(r["annotations"]["event_type"] for r in records if r["name"] == "## validate record") == {
        "ServiceLatencyIncreased": 1
    }
    assert Counter(r["annotations"]["event_type"] for r in records if r["name"] == "## decide record") == {
        "EventAccepted": 1,
        "DiagnosisRequested": 1,
        "DependencyFailureSuspected": 1,
        "RecoveryProposed": 1,
    }
    stage_segments = [s for s in joined.capture.function_segments() if s["name"] in joined.stage_of_function]
    assert len(stage_segments) == len(records), "one invocation per record: the workflow is a chain"
    in_stages = [e for e in joined.entities if joined.function_of(e)["name"] in joined.stage_of_function]
    assert {entity["trace_id"] for entity in in_stages} == {ROOT}, "nothing of the workflow left its trace"


def test_each_hop_is_a_child_of_the_record_that_published_its_input(joined: Traced) -> None:
    """function segment -> ## lambda_handler -> ## <stage> record -> its AWS calls, and the batch's one
    PutEvents under ## lambda_handler after its records; the next stage's function segment is a child of
    the record subsegment that published its input (the entry's TraceHeader names it)."""
    for record in joined.records():
        handler = joined.by_id[record["parent_id"]]
        assert handler["name"] == "## lambda_handler"
        function = joined.by_id[handler["parent_id"]]
        assert function["origin"] == tracing.FUNCTION_ORIGIN
        assert joined.stage_of_function[function["name"]] == record["annotations"]["stage"]
        calls = [c for c in joined.children(record) if c.get("namespace") == "aws"]
        assert calls, "a record's AWS calls are its children"
        if record_ids(record)["published"]:
            sent = [c for c in joined.children(handler) if c.get("namespace") == "aws"]
            assert "PutEvents" in {c["aws"]["operation"] for c in sent if c["name"] == "events"}, (
                "a batch's facts go out together"
            )
        if record["annotations"]["event_type"] == ENTRY_TYPE:
            assert "parent_id" not in function, "the producer's header named no parent"
            continue
        publisher = joined.by_id[function["parent_id"]]
        assert publisher["name"].endswith(" record")
        assert record_ids(record)["event_id"] in {p["id"] for p in record_ids(publisher)["published"]}
        assert record["metadata"][telemetry.NAMESPACE]["aws_trace_header"] == (
            f"Root={ROOT};Parent={publisher['id']};Sampled=1"
        ), "the SQS record carried its PutEvents entry's TraceHeader"
        assert record_ids(record)["traceparent"] == f"00-{ROOT[2:].replace('-', '')}-{publisher['id']}-01", (
            "and its envelope the same context as a W3C traceparent, for an OpenTelemetry subscriber"
        )


def test_the_aws_calls_are_traced_under_the_record_that_made_them(joined: Traced) -> None:
    calls = [e for e in joined.entities if e.get("namespace") == "aws"]
    by_operation = Counter((c["name"], c["aws"]["operation"]) for c in calls)
    assert by_operation[("ecs", "UpdateService")] == 1
    (scale,) = [c for c in calls if c["aws"]["operation"] == "UpdateService"]
    owner = joined.by_id[scale["parent_id"]]
    assert owner["annotations"]["stage"] == "execute"
    assert owner["annotations"]["event_type"] == "CommandAuthorized"
    assert (
        by_operation[("monitoring", "GetMetricData")] + by_operation[("monitoring", "GetMetricStatistics")]
        > 0
    )
    assert all(joined.function_of(c)["name"] in joined.stage_of_function for c in calls)
    assert {c["trace_id"] for c in calls} == {ROOT}


def test_without_a_producer_header_only_the_first_hop_is_in_another_trace(unjoined: Traced) -> None:
    entry = unjoined.entry()
    assert entry["trace_id"] != ROOT, "Lambda started a new trace for the producer's event"
    assert entry["annotations"]["trace_id"] == TRACE_ID, "annotated all the same: one filter finds it"
    rest = [r for r in unjoined.records() if r is not entry]
    assert {r["trace_id"] for r in rest} == {ROOT}
    assert {r["annotations"]["stage"] for r in rest} == set(STAGES) - {"validate"}, "validate saw the alert"
    first_decide = rest[0]
    assert first_decide["annotations"]["stage"] == "decide"
    assert first_decide["metadata"][telemetry.NAMESPACE]["aws_trace_header"] == f"Root={ROOT}"


def test_every_record_log_line_carries_its_ids_and_the_metrics_count_every_record(unjoined: Traced) -> None:
    records = unjoined.records()
    for stage in STAGES:
        lines = unjoined.log_lines(stage)
        processed = [line for line in lines if line.get("message") == "record processed"]
        assert len(processed) == sum(1 for r in records if r["annotations"]["stage"] == stage)
        for line in processed:
            assert line["stage"] == stage
            assert line["trace_id"] == TRACE_ID
            assert line["tenant_id"] == "org_enterprise_alpha"
            assert line["run_id"] == records[0]["annotations"]["run_id"]
            assert line["event_id"]
            assert line["xray_trace_id"] in {ROOT, unjoined.entry()["trace_id"]}
        info = [line for line in lines if line.get("level") == "INFO"]
        assert not [line for line in info if "payload" in line or "published_payloads" in line]
        emf = [line for line in lines if "_aws" in line]
        assert emf, f"{stage} wrote no EMF"
        for document in emf:
            (directive,) = document["_aws"]["CloudWatchMetrics"]
            assert directive["Namespace"] == "intentbus"
            assert directive["Dimensions"] == [["stage", "service"]]
            assert document["stage"] == stage
            assert document["service"] == f"intentbus-{stage}"
        assert sum(sum(document.get("processed", [])) for document in emf) == len(processed)
        assert sum(sum(document.get("applied", [])) for document in emf) == len(processed)
        assert sum(len(document.get("latency", [])) for document in emf) == len(processed)


# ------------------------------------------------------------------------------------- OpenTelemetry

PRODUCER = TraceParent(trace_id="5f3a1b2c0123456789abcdef01234567", span_id="00f067aa0ba902b7")


def _span_exporter() -> InMemorySpanExporter:
    """The process's one OpenTelemetry provider (the SDK lets a process set it once), in memory."""
    provider = otel_trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        exporter = InMemorySpanExporter()
        otel_trace.set_tracer_provider(new_provider(exporter, batched=False))
        return exporter
    processor = provider._active_span_processor._span_processors[0]
    exporter = processor.span_exporter  # type: ignore[attr-defined]
    assert isinstance(exporter, InMemorySpanExporter)
    return exporter


@dataclass
class Spans:
    spans: list[ReadableSpan]

    def __post_init__(self) -> None:
        self.by_id = {span.context.span_id: span for span in self.spans}

    def records(self) -> list[ReadableSpan]:
        found = [span for span in self.spans if span.kind is SpanKind.CONSUMER]
        return sorted(found, key=lambda span: span.start_time or 0)

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        return None if span.parent is None else self.by_id.get(span.parent.span_id)

    def attribute(self, span: ReadableSpan, name: str) -> Any:
        assert span.attributes is not None
        return span.attributes.get(name)


@pytest.fixture(scope="module")
def otel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spans]:
    exporter = _span_exporter()
    exporter.clear()
    chosen = spans.active()
    try:
        with LocalCloud(
            mode="server",
            logs_dir=tmp_path_factory.mktemp("otel") / "logs",
            parameters={"TracingBackend": "otel"},
        ) as cloud:
            seed.seed_service(cloud.clients)
            seed.seed_metrics(cloud.clients)
            event = {**seed.latency_event(), "trace_id": TRACE_ID, "traceparent": str(PRODUCER)}
            entry = {"Source": "monitoring.example", "DetailType": ENTRY_TYPE, "Detail": json.dumps(event)}
            cloud.put_events([entry])
            assert cloud.run_until_idle(max_invocations=100).idle
            assert seed.desired_count(cloud.clients) == 4
            yield Spans(list(exporter.get_finished_spans()))
    finally:
        spans.use(chosen)
        exporter.clear()


def test_otel_the_incident_workflow_is_one_trace_joined_to_the_producers(otel: Spans) -> None:
    records = otel.records()
    assert [otel.attribute(r, "intentbus.stage") for r in records] == RUN
    assert {format(span.context.trace_id, "032x") for span in otel.spans} == {PRODUCER.trace_id}
    run_id = otel.attribute(records[0], "intentbus.run_id")
    for record in records:
        stage = otel.attribute(record, "intentbus.stage")
        assert record.name == f"process {stage}"
        assert otel.attribute(record, "messaging.system") == "aws_sqs"
        assert otel.attribute(record, "messaging.operation.type") == "process"
        assert otel.attribute(record, "messaging.destination.name")
        assert otel.attribute(record, "intentbus.tenant_id") == "org_enterprise_alpha"
        assert otel.attribute(record, "intentbus.run_id") == run_id
        assert otel.attribute(record, "intentbus.trace_id") == TRACE_ID
        assert otel.attribute(record, "intentbus.outcome") == "applied"
        assert isinstance(otel.attribute(record, "intentbus.step_index"), int)
        assert otel.attribute(record, "cloudevents.event_type")


def test_otel_each_stage_is_a_child_of_the_publish_that_carried_its_input(otel: Spans) -> None:
    """producer -> process validate -> send <bus> -> process decide -> send <bus> -> ... -> process record."""
    for record in otel.records():
        assert record.parent is not None
        if otel.attribute(record, "cloudevents.event_type") == ENTRY_TYPE:
            assert record.parent.span_id == int(PRODUCER.span_id, 16), "the producer's traceparent"
            assert record.parent.is_remote
            continue
        publish = otel.parent(record)
        assert publish is not None
        assert publish.kind is SpanKind.PRODUCER
        assert publish.name.startswith("send ")
        assert otel.attribute(publish, "messaging.operation.type") == "send"
        publisher = otel.parent(publish)
        assert publisher is not None
        assert publisher.kind is SpanKind.CONSUMER
        published = otel.attribute(publisher, "intentbus.published")
        assert otel.attribute(record, "cloudevents.event_type") in published


def test_otel_decide_says_what_the_model_cost_and_execute_which_tool_on_which_attempt(otel: Spans) -> None:
    decides = [r for r in otel.records() if otel.attribute(r, "intentbus.stage") == "decide"]
    proposing = [d for d in decides if "CommandProposed" in otel.attribute(d, "intentbus.published")]
    assert len(proposing) == 4, "the scripted agents' four proposals"
    for decide in proposing:
        assert otel.attribute(decide, "gen_ai.usage.input_tokens") == 0, "scripted agents use no model"
        assert otel.attribute(decide, "gen_ai.usage.output_tokens") == 0
        assert otel.attribute(decide, "intentbus.decide.latency_ms") >= 0
        assert otel.attribute(decide, "intentbus.agent")
    executes = [r for r in otel.records() if otel.attribute(r, "intentbus.stage") == "execute"]
    assert executes
    for execute in executes:
        assert otel.attribute(execute, "intentbus.tool")
        assert otel.attribute(execute, "intentbus.command_type")
        assert otel.attribute(execute, "intentbus.attempt") == 1
