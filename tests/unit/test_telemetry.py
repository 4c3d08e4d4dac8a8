"""Telemetry of one stage handler, in memory: the per-record subsegment, log keys, redaction, EMF metrics.

The X-Ray SDK sends to an in-memory capture (intentbus_local.tracing, no daemon, no socket) inside a
trace context like the one Lambda sets; the Logger writes to a buffer; the metrics are read back as the
EMF document Powertools would print.
"""

from __future__ import annotations

import io
import json
import logging
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, cast

import aws_xray_sdk
import pytest
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field

from intentbus import approval_backlog, facts, telemetry
from intentbus.adapters.eventbridge_bus import to_entry
from intentbus.approval_record import Approval
from intentbus.catalog import Catalog
from intentbus.definition import Budget, Decision, DecisionContext, ScriptedAgent, Step, Workflow
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.handler import SqsStageHandler
from intentbus.journal import ApprovalStatus, Outcome
from intentbus.policy import Policy
from intentbus.registry import REDACTED, SENSITIVE, WITHHELD, Payload, TypeRegistry, TypeSpec
from intentbus.stages.common import StageCore, StageResult
from intentbus.testing import InMemoryPipeline
from intentbus_local import tracing
from tests.fakes import raw_body

TENANT = "acme"
TRACE = "tr_signup_42"


class Contact(Payload):
    email: Annotated[str, SENSITIVE]
    name: str


class SignupReceived(Payload):
    contact: Contact
    plan: str
    referrer_phone: str | None = Field(default=None, json_schema_extra={"sensitive": True})


class SignupWelcomed(Payload):
    plan: str


def _never(context: DecisionContext) -> Decision:
    raise AssertionError("these tests run validate only")


workflow = Workflow(
    name="signups", version="1", budget=Budget(max_depth=4, max_steps=4), policy=Policy(rules=())
)
workflow.event("SignupReceived", SignupReceived, starts=True)
workflow.event("SignupWelcomed", SignupWelcomed)
workflow.step(
    Step(
        on="SignupReceived",
        agent=ScriptedAgent("greeter", _never),
        outcome="SignupWelcomed",
        final=True,
    )
)


def signup(**detail: Any) -> str:
    body = {
        "id": "evt-signup-1",
        "type": "SignupReceived",
        "tenant_id": TENANT,
        "trace_id": TRACE,
        "run_id": "run-signup-1",
        "payload": {
            "contact": {"email": "ada@example.com", "name": "Ada"},
            "plan": "pro",
            "referrer_phone": "+44 20 7946 0000",
        },
        **detail,
    }
    return raw_body(body, detail_type="SignupReceived", source="crm.example")


def sqs_record(message_id: str, body: str, trace_header: str | None = None) -> dict[str, Any]:
    attributes = {"ApproximateReceiveCount": "1"}
    if trace_header:
        attributes["AWSTraceHeader"] = trace_header
    return {
        "messageId": message_id,
        "receiptHandle": f"rh-{message_id}",
        "body": body,
        "attributes": attributes,
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:validate",
        "awsRegion": "us-east-1",
    }


@dataclass
class Traced:
    logger: Logger
    tracer: Tracer
    metrics: Metrics
    log: io.StringIO
    capture: tracing.Capture
    trace: tracing.InvocationTrace

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.getvalue().splitlines() if line.strip()]

    def emf(self) -> dict[str, Any]:
        document = cast(dict[str, Any], self.metrics.serialize_metric_set())
        self.metrics.clear_metrics()
        return document

    def records(self) -> list[dict[str, Any]]:
        return [e for e in self.capture.entities() if str(e.get("name", "")).endswith(" record")]


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[Traced]:
    """Real Powertools inside a Lambda-like trace context (a facade segment from _X_AMZN_TRACE_ID)."""
    sdk_was_enabled = aws_xray_sdk.global_sdk_config.sdk_enabled()
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "unit")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "intentbus-unit")
    log = io.StringIO()
    # Powertools binds a named logger's stream once: a name of its own per test keeps lines apart.
    logger = Logger(service=f"unit-{uuid.uuid4().hex[:8]}", stream=log, level="DEBUG")
    monkeypatch.setattr(logging.getLogger(logger.service), "propagate", False)
    tracer = Tracer(disabled=True, auto_patch=False)  # the handler opens subsegments on the provider
    metrics = Metrics(service="unit")
    metrics.clear_metrics()
    trace = tracing.InvocationTrace.for_event({})
    monkeypatch.setenv(telemetry.LAMBDA_TRACE_ENV, trace.header)
    try:
        with (
            tracing.capture() as captured,
            tracing.traced_invocation(
                captured, trace, function_name="validate", function_arn="arn:fn", request_id="req-1"
            ),
        ):
            yield Traced(logger, tracer, metrics, log, captured, trace)
    finally:
        metrics.clear_metrics()
        aws_xray_sdk.global_sdk_config.set_sdk_enabled(sdk_was_enabled)


def handler_over(traced: Traced, core: StageCore, types: TypeRegistry | None = None) -> SqsStageHandler:
    return SqsStageHandler(
        "validate",
        build=lambda runtime: core,
        logger=traced.logger,
        tracer=traced.tracer,
        metrics=traced.metrics,
        runtime=lambda: None,  # type: ignore[arg-type, return-value]
        types=types,
    )


@pytest.fixture
def pipeline() -> InMemoryPipeline:
    return InMemoryPipeline(Catalog([workflow]))


# --------------------------------------------------------------------------------------------- tracing


def test_a_workflow_trace_id_is_an_xray_trace_id_derived_once_and_for_all() -> None:
    derived = telemetry.xray_trace_id(TRACE)
    assert re.fullmatch(r"1-[0-9a-f]{8}-[0-9a-f]{24}", derived)
    assert telemetry.xray_trace_id(TRACE) == derived
    assert telemetry.xray_trace_id("tr_other") != derived
    own = "1-5759e988-bd862e3fe1be46a994272793"
    assert telemetry.xray_trace_id(own) == own, "a producer's own X-Ray trace id is kept"


def test_trace_headers_parse_and_print() -> None:
    header = telemetry.TraceHeader.parse(
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    )
    assert header == telemetry.TraceHeader("1-5759e988-bd862e3fe1be46a994272793", "53995c3f42cd8ad8", True)
    assert str(header) == "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    assert telemetry.TraceHeader.parse("Parent=53995c3f42cd8ad8") is None
    assert telemetry.TraceHeader.parse(None) is None


def test_outside_a_traced_invocation_an_entry_names_only_the_workflow_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(telemetry.LAMBDA_TRACE_ENV, raising=False)
    envelope = _envelope()
    assert to_entry(envelope, "bus")["TraceHeader"] == f"Root={telemetry.xray_trace_id(TRACE)}"


def test_every_record_gets_a_subsegment_annotated_with_its_ids(
    traced: Traced, pipeline: InMemoryPipeline
) -> None:
    core = pipeline.stages["validate"]
    response = handler_over(traced, core).handle_batch(
        {"Records": [sqs_record("m-1", signup())]}, cast(LambdaContext, None)
    )

    assert response == {"batchItemFailures": []}
    (record,) = traced.records()
    assert record["name"] == "## validate record"
    assert record["trace_id"] == traced.trace.root
    assert record["parent_id"] == traced.trace.segment_id, "a child of Lambda's function segment"
    assert record["annotations"] == {
        "stage": "validate",
        "outcome": "applied",
        "tenant_id": TENANT,
        "run_id": "run-signup-1",
        "event_type": "SignupReceived",
        "trace_id": TRACE,
        "step_index": 0,
    }
    metadata = record["metadata"][telemetry.NAMESPACE]["record"]
    assert metadata["event_id"] == "evt-signup-1"
    assert metadata["message_id"] == "m-1"
    assert metadata["version"] == 0
    assert [p["type"] for p in metadata["published"]] == [facts.EVENT_ACCEPTED]
    assert "payload" not in json.dumps(record), "no payload goes to X-Ray"


def test_what_a_stage_publishes_in_a_traced_record_names_that_record_as_parent(
    traced: Traced, pipeline: InMemoryPipeline
) -> None:
    """The invocation is in the workflow's own trace: its outputs' parent is the record's subsegment."""
    workflow_root = telemetry.xray_trace_id(TRACE)
    in_trace = tracing.InvocationTrace(workflow_root, "1111222233334444", None, sampled=True)
    traced.capture.documents.clear()
    headers: list[str] = []

    class Capturing:
        def handle(self, body: str, message_id: str | None = None) -> StageResult:
            result = pipeline.stages["validate"].handle(body, message_id)
            headers.extend(to_entry(out, "bus")["TraceHeader"] for out in result.published)
            return result

        def reject(self, error: MalformedInput, body: str, message_id: str | None = None) -> StageResult:
            return pipeline.stages["validate"].reject(error, body, message_id)

        def bind(self, context: LambdaContext) -> None:
            return None

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(telemetry.LAMBDA_TRACE_ENV, in_trace.header)
        handler_over(traced, Capturing()).handle_batch(
            {"Records": [sqs_record("m-1", signup())]}, cast(LambdaContext, None)
        )
    (record,) = traced.records()
    assert record["trace_id"] == workflow_root
    assert headers == [f"Root={workflow_root};Parent={record['id']};Sampled=1"]


def test_a_failing_record_is_annotated_failed_with_the_ids_its_body_claims(traced: Traced) -> None:
    class Broken:
        def handle(self, body: str, message_id: str | None = None) -> StageResult:
            raise RuntimeError("the store is down")

        def reject(self, error: MalformedInput, body: str, message_id: str | None = None) -> StageResult:
            raise RuntimeError("the store is down")

        def bind(self, context: LambdaContext) -> None:
            return None

    with pytest.raises(BatchProcessingError):  # every record failed: SQS retries the whole batch
        handler_over(traced, Broken()).handle_batch(
            {"Records": [sqs_record("m-1", signup()), sqs_record("m-2", signup(id="evt-2"))]},
            cast(LambdaContext, None),
        )

    records = traced.records()
    assert [r["annotations"]["outcome"] for r in records] == ["failed", "failed"]
    assert records[0]["annotations"]["run_id"] == "run-signup-1"
    assert records[0]["fault"] is True
    assert records[0]["cause"]["exceptions"][0]["message"] == "the store is down"
    failed = [line for line in traced.lines() if line["message"] == "record failed; SQS will retry it"]
    assert [(line["message_id"], line["event_id"], line["trace_id"]) for line in failed] == [
        ("m-1", "evt-signup-1", TRACE),
        ("m-2", "evt-2", TRACE),
    ]
    emf = traced.emf()
    assert emf["failed"] == [2.0], "counted once per batch"
    assert "processed" not in emf


# ------------------------------------------------------------------------------------------------ logs


def test_every_log_line_carries_the_record_ids_and_info_lines_carry_no_payload(
    traced: Traced, pipeline: InMemoryPipeline
) -> None:
    handler = handler_over(traced, pipeline.stages["validate"], pipeline.catalog.types)
    handler.handle_batch({"Records": [sqs_record("m-1", signup())]}, cast(LambdaContext, None))

    lines = traced.lines()
    assert [line["message"] for line in lines] == ["record processed", "record payloads"]
    for line in lines:
        assert {key: line[key] for key in ("stage", "trace_id", "run_id", "event_id", "tenant_id")} == {
            "stage": "validate",
            "trace_id": TRACE,
            "run_id": "run-signup-1",
            "event_id": "evt-signup-1",
            "tenant_id": TENANT,
        }
    info = [line for line in lines if line["level"] == "INFO"]
    assert info
    assert all("ada@example.com" not in json.dumps(line) and "pro" not in line.values() for line in info)
    assert "payload" not in json.dumps(info)


@dataclass
class _Invocation:
    aws_request_id: str = "req-7"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:validate"


def test_the_record_line_is_one_compact_line_with_what_an_operator_follows(
    traced: Traced, pipeline: InMemoryPipeline
) -> None:
    handler = handler_over(traced, pipeline.stages["validate"])
    traced.logger.setLevel("INFO")
    handler.handle_batch({"Records": [sqs_record("m-1", signup())]}, cast(LambdaContext, _Invocation()))

    (line,) = traced.lines()
    assert line["message"] == "record processed"
    assert line["level"] == "INFO"
    expected = {
        "stage": "validate",
        "outcome": "applied",
        "message_id": "m-1",
        "run_id": "run-signup-1",
        "correlation_id": "run-signup-1",
        "trace_id": TRACE,
        "event_id": "evt-signup-1",
        "event_type": "SignupReceived",
        "tenant_id": TENANT,
        "published": [facts.EVENT_ACCEPTED],
        "function_request_id": "req-7",
        "xray_trace_id": traced.trace.root,
    }
    assert {key: line[key] for key in expected} == expected
    assert line["duration_ms"] >= 0
    assert not {"function_arn", "function_name", "function_memory_size", "location"} & set(line)
    assert len(traced.log.getvalue().encode()) < 600, "one line of ~500 bytes, not ~750"


def test_above_info_no_record_line_is_written(traced: Traced, pipeline: InMemoryPipeline) -> None:
    traced.logger.setLevel("WARNING")
    handler_over(traced, pipeline.stages["validate"]).handle_batch(
        {"Records": [sqs_record("m-1", signup())]}, cast(LambdaContext, _Invocation())
    )
    assert traced.log.getvalue() == ""


def test_debug_payloads_are_redacted_by_the_type_registry(traced: Traced, pipeline: InMemoryPipeline) -> None:
    handler = handler_over(traced, pipeline.stages["validate"], pipeline.catalog.types)
    handler.handle_batch({"Records": [sqs_record("m-1", signup())]}, cast(LambdaContext, None))

    (debug,) = [line for line in traced.lines() if line["level"] == "DEBUG"]
    assert debug["payload"] == {
        "contact": {"email": REDACTED, "name": "Ada"},
        "plan": "pro",
        "referrer_phone": REDACTED,
    }
    (accepted,) = debug["published_payloads"]
    assert accepted["type"] == facts.EVENT_ACCEPTED
    assert accepted["payload"]["event"]["payload"]["contact"] == {"email": REDACTED, "name": "Ada"}
    assert "ada@example.com" not in traced.log.getvalue()
    assert "7946" not in traced.log.getvalue()


def test_without_a_registry_payloads_are_withheld(traced: Traced, pipeline: InMemoryPipeline) -> None:
    handler_over(traced, pipeline.stages["validate"]).handle_batch(
        {"Records": [sqs_record("m-1", signup())]}, cast(LambdaContext, None)
    )
    (debug,) = [line for line in traced.lines() if line["level"] == "DEBUG"]
    assert debug["payload"] == WITHHELD


def test_the_registry_redacts_nested_models_envelopes_and_collections() -> None:
    class Lead(Payload):
        contacts: list[Contact]
        by_name: dict[str, Contact]
        primary: Contact | None = None
        owner: Envelope | None = None

    registry = TypeRegistry(
        [
            TypeSpec("Lead", Kind.EVENT, Lead, "unit"),
            TypeSpec("SignupReceived", Kind.EVENT, SignupReceived, "unit"),
        ]
    )
    contact = {"email": "a@example.com", "name": "A"}
    owner = _envelope().model_dump(mode="json")
    redacted = registry.redact(
        "Lead", {"contacts": [contact], "by_name": {"a": contact}, "primary": contact, "owner": owner}
    )
    hidden = {"email": REDACTED, "name": "A"}
    assert redacted["contacts"] == [hidden]
    assert redacted["by_name"] == {"a": hidden}
    assert redacted["primary"] == hidden
    assert redacted["owner"]["payload"]["contact"] == {"email": REDACTED, "name": "Ada"}
    assert registry.redact("Unknown", contact) == WITHHELD
    assert registry.sensitive_fields("SignupReceived") == {"referrer_phone"}
    schema = registry.json_schemas()["Lead"]["$defs"]["Contact"]["properties"]["email"]
    assert schema["sensitive"] is True, "producers see which fields are sensitive"


# --------------------------------------------------------------------------------------------- metrics


def test_metrics_count_outcomes_and_time_records_per_stage(
    traced: Traced, pipeline: InMemoryPipeline
) -> None:
    handler = handler_over(traced, pipeline.stages["validate"])
    body = signup()
    handler.handle_batch(
        {"Records": [sqs_record("m-1", body), sqs_record("m-2", body), sqs_record("m-3", "{")]},
        cast(LambdaContext, None),
    )

    emf = traced.emf()
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "intentbus-unit"
    assert directive["Dimensions"] == [["stage", "service"]]
    assert emf["stage"] == "validate"
    units = {metric["Name"]: metric["Unit"] for metric in directive["Metrics"]}
    assert units == {
        "processed": "Count",
        "applied": "Count",
        "duplicate": "Count",
        "quarantined": "Count",
        "latency": "Milliseconds",
    }
    assert emf["processed"] == [3.0], "counted once per batch, with the batch's total"
    assert (emf["applied"], emf["duplicate"], emf["quarantined"]) == ([1.0], [1.0], [1.0])
    assert len(emf["latency"]) == 3
    assert all(value >= 0 for value in emf["latency"])


def test_a_paused_decision_counts_as_a_budget_exhausted() -> None:
    assert telemetry.outcome_counts("decide", Outcome.PAUSED) == ("processed", "paused", "budget_exhausted")
    assert telemetry.outcome_counts("record", Outcome.PAUSED) == ("processed", "paused")
    assert telemetry.outcome_counts("authorize", Outcome.WAITING) == ("processed", "waiting")
    assert telemetry.outcome_counts("execute", Outcome.QUARANTINED, forged=True) == (
        "processed",
        "quarantined",
        "forged_facts",
    )


@dataclass
class _Pending:
    requested_at: datetime
    status: ApprovalStatus = ApprovalStatus.PENDING


def test_the_approval_backlog_is_the_pending_count_and_the_oldest_age() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    approvals = [_Pending(now - timedelta(minutes=5)), _Pending(now - timedelta(hours=2))]
    backlog = approval_backlog.approval_backlog(cast(list[Approval], approvals), now)
    assert backlog == approval_backlog.ApprovalBacklog(pending=2, oldest_age_seconds=7200.0)
    assert approval_backlog.approval_backlog([], now) == approval_backlog.ApprovalBacklog(0, 0.0)


def test_the_expiry_sweep_reports_what_it_left_pending() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    pending = [_Pending(now - timedelta(seconds=90)), _Pending(now - timedelta(seconds=30))]
    metrics = Metrics(namespace="intentbus-unit", service="expire")
    metrics.clear_metrics()
    try:
        backlog = approval_backlog.report_approval_backlog(metrics, cast(list[Approval], pending), now)
        emf = cast(dict[str, Any], metrics.serialize_metric_set())
    finally:
        metrics.clear_metrics()
    assert backlog.pending == 2
    assert (emf["approvals_pending"], emf["approval_oldest_age"]) == ([2.0], [90.0])


def _envelope() -> Envelope:
    return Envelope(
        id="evt-signup-1",
        source="crm.example",
        type="SignupReceived",
        time=datetime(2026, 1, 1, tzinfo=UTC),
        kind=Kind.EVENT,
        tenant_id=TENANT,
        trace_id=TRACE,
        run_id="run-signup-1",
        step_index=0,
        correlation_id="run-signup-1",
        payload={"contact": {"email": "ada@example.com", "name": "Ada"}, "plan": "pro"},
    )
