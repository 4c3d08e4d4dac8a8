"""CloudEvents 1.0 structured mode at validate, each event built with the official SDK.

A valid CloudEvent is accepted, or quarantined only for a reason about this workflow: its type, its
tenant, its data against the type's payload model. What it says beyond the workflow's fields (its
extensions, its trace context) stays on the envelope and on the facts that follow it.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, cast

import pytest
from cloudevents.conversion import to_dict, to_structured
from cloudevents.http import CloudEvent
from pydantic import Base64Bytes

from intentbus import facts
from intentbus.adapters.dynamodb_store import auth_sk
from intentbus.catalog import Catalog
from intentbus.definition import Workflow
from intentbus.envelope import MAX_ID_CHARS, Envelope
from intentbus.extensions import MAX_EXTENSIONS, MAX_EXTENSIONS_BYTES, RUN_ENDED
from intentbus.ids import key_part
from intentbus.journal import Outcome
from intentbus.policy import Policy
from intentbus.producer import Producer
from intentbus.producers import ProducerBindings
from intentbus.registry import Payload
from intentbus.stages.common import StageResult
from intentbus.testing import InMemoryPipeline
from intentbus.workflows import direct_tool, incident
from tests.fakes import raw_body
from tests.unit import sample_workflow as orders
from tests.unit.test_producer import FakeEvents

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient

LATENCY = "ServiceLatencyIncreased"
LATENCY_DATA = {
    "service": "checkout-api",
    "cluster": "shop",
    "environment": "dev",
    "p99_ms": 900,
    "threshold_ms": 300,
}
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class AlertText(Payload):
    data: str


class Attachment(Payload):
    data: Base64Bytes


class Readings(Payload):
    data: list[int]


feeds = Workflow(name="feeds", version="1", policy=Policy(rules=()))
feeds.event("AlertText", AlertText)
feeds.event("Attachment", Attachment)
feeds.event("Readings", Readings)
CATALOG = Catalog([incident.workflow, direct_tool.workflow, feeds])


def cloudevent(
    data: Any = None, *, type: str = LATENCY, source: str = "monitor", **attributes: Any
) -> CloudEvent:
    return CloudEvent({"type": type, "source": source, "tenantid": "acme", **attributes}, data)


def body(event: CloudEvent) -> str:
    """The SQS body validate receives for the event put on the ingress as it is, structured mode."""
    _, structured = to_structured(event)
    detail = json.loads(structured)
    return raw_body(detail, detail_type=detail["type"], source=detail["source"])


def validate(
    event: CloudEvent, pipeline: InMemoryPipeline | None = None
) -> tuple[StageResult, InMemoryPipeline]:
    pipeline = pipeline or InMemoryPipeline(CATALOG)
    return pipeline.deliver("validate", body(event)), pipeline


def accepted(event: CloudEvent) -> tuple[Envelope, Envelope]:
    """The envelope validate accepted, and the fact it published for it."""
    result, pipeline = validate(event)
    assert result.outcome is Outcome.APPLIED, pipeline.quarantine.records
    (fact,) = result.published
    assert result.envelope is not None
    return result.envelope, fact


def quarantined(event: CloudEvent) -> tuple[str, str | None]:
    """The reason and the field validate quarantined the event with."""
    result, pipeline = validate(event)
    assert result.outcome is Outcome.QUARANTINED
    assert result.published == ()
    (record,) = pipeline.quarantine.records
    return record["reason"], record["field"]


def accepted_event_of(fact: Envelope) -> Envelope:
    assert fact.type == facts.EVENT_ACCEPTED
    return facts.EventAccepted.model_validate(fact.payload).event


# --- extensions ---------------------------------------------------------------------------------------


def test_an_unknown_extension_is_kept_and_carried_on_to_the_fact() -> None:
    envelope, fact = accepted(cloudevent(LATENCY_DATA, comexampleorigin="eu-1/probe-7"))
    assert envelope.extensions == {"comexampleorigin": "eu-1/probe-7"}
    assert fact.extensions == {"comexampleorigin": "eu-1/probe-7"}
    assert accepted_event_of(fact).extensions == {"comexampleorigin": "eu-1/probe-7"}
    assert envelope.payload["service"] == "checkout-api"


def test_the_partitioning_extension_is_kept() -> None:
    envelope, fact = accepted(cloudevent(LATENCY_DATA, partitionkey="checkout-api", sequence=7, sampled=True))
    assert envelope.extensions == {"partitionkey": "checkout-api", "sequence": 7, "sampled": True}
    assert fact.to_json_dict()["extensions"] == envelope.extensions
    assert fact.extensions["sampled"] is True  # each keeps its CloudEvents type


def test_extensions_up_to_the_bound_are_kept_and_one_more_is_quarantined() -> None:
    at_bound: dict[str, Any] = {f"ext{n}": n for n in range(MAX_EXTENSIONS)}
    envelope, _ = accepted(cloudevent(LATENCY_DATA, **at_bound))
    assert envelope.extensions == at_bound

    reason, field = quarantined(cloudevent(LATENCY_DATA, **at_bound, onemore="x"))
    assert (
        reason == f"{MAX_EXTENSIONS + 1} extension attributes, over the {MAX_EXTENSIONS} an event may carry"
    )
    assert field == "<key>"


def test_extensions_over_the_size_bound_are_quarantined() -> None:
    reason, _ = quarantined(cloudevent(LATENCY_DATA, big="x" * MAX_EXTENSIONS_BYTES))
    assert f"over the {MAX_EXTENSIONS_BYTES} an event may carry" in reason


@pytest.mark.parametrize(
    ("value", "told"),
    [({"nested": 1}, "a JSON object"), ([1], "a JSON array"), (1.5, "a fractional number")],
)
def test_an_extension_value_cloudevents_has_no_type_for_is_quarantined(value: Any, told: str) -> None:
    detail = to_dict(cloudevent(LATENCY_DATA))
    detail["comexampleodd"] = value
    pipeline = InMemoryPipeline(CATALOG)
    result = pipeline.deliver("validate", raw_body(detail, detail_type=LATENCY, source="monitor"))
    assert result.outcome is Outcome.QUARANTINED
    assert pipeline.quarantine.records[-1]["reason"].endswith(f"not {told}")


def test_a_null_attribute_is_unset() -> None:
    detail = to_dict(cloudevent(LATENCY_DATA, comexampleorigin="probe"))
    detail |= {"subject": None, "comexampleunset": None, "traceid": None}
    pipeline = InMemoryPipeline(CATALOG)
    result = pipeline.deliver("validate", raw_body(detail, detail_type=LATENCY, source="monitor"))
    assert result.outcome is Outcome.APPLIED, pipeline.quarantine.records
    assert result.envelope is not None
    assert result.envelope.extensions == {"comexampleorigin": "probe"}
    assert result.envelope.trace_id.startswith("tr_")  # derived, as when absent


def test_a_native_envelope_carries_extensions_in_its_extensions_object_within_the_same_bounds() -> None:
    native = {"tenant_id": "acme", "type": LATENCY, "payload": LATENCY_DATA, "extensions": {"team": "sre"}}
    pipeline = InMemoryPipeline(CATALOG)
    result = pipeline.deliver("validate", raw_body(native, detail_type=LATENCY))
    assert result.envelope is not None
    assert result.envelope.extensions == {"team": "sre"}

    native["extensions"] = {f"e{n}": n for n in range(MAX_EXTENSIONS + 1)}
    assert pipeline.deliver("validate", raw_body(native, detail_type=LATENCY)).outcome is Outcome.QUARANTINED
    assert pipeline.quarantine.records[-1]["field"] == "extensions"
    native["extensions"] = {"tenantid": "globex"}
    assert pipeline.deliver("validate", raw_body(native, detail_type=LATENCY)).outcome is Outcome.QUARANTINED
    assert pipeline.quarantine.records[-1]["reason"] == (
        "tenantid is read by the envelope itself, not carried as an extension"
    )


# --- trace context ------------------------------------------------------------------------------------


def test_traceparent_and_tracestate_are_kept_and_carried_on() -> None:
    envelope, fact = accepted(
        cloudevent(LATENCY_DATA, traceparent=TRACEPARENT, tracestate="congo=t61rcWkgMzE")
    )
    assert (envelope.traceparent, envelope.tracestate) == (TRACEPARENT, "congo=t61rcWkgMzE")
    assert (fact.traceparent, fact.tracestate) == (TRACEPARENT, "congo=t61rcWkgMzE")
    assert envelope.extensions == {}


# --- ids and identity ---------------------------------------------------------------------------------


def test_a_150_character_id_is_accepted_and_deduplicated() -> None:
    event = cloudevent(LATENCY_DATA, id="i" * 150)
    first, pipeline = validate(event)
    assert first.envelope is not None
    assert first.envelope.id == "i" * 150
    again, _ = validate(event, pipeline)
    assert again.outcome is Outcome.DUPLICATE
    assert again.published == first.published


def test_an_id_at_the_bound_is_accepted_and_one_over_it_is_quarantined() -> None:
    envelope, _ = accepted(cloudevent(LATENCY_DATA, id="é" * MAX_ID_CHARS))
    assert len(envelope.id) == MAX_ID_CHARS
    reason, field = quarantined(cloudevent(LATENCY_DATA, id="i" * (MAX_ID_CHARS + 1)))
    assert (reason, field) == (f"id: String should have at most {MAX_ID_CHARS} characters", "id")


def test_a_long_id_is_hashed_where_it_becomes_a_dynamodb_key() -> None:
    longest = "é" * MAX_ID_CHARS  # 2,048 bytes in UTF-8
    assert len(auth_sk(longest).encode()) <= 100
    assert auth_sk("cmd-1") == "AUTH#cmd-1"  # a short id is kept: keys written before stay found
    assert key_part("i" * 128) == "i" * 128
    assert key_part(key_part(longest)) != key_part(longest)  # a kept id never equals a digest


def test_the_same_id_from_two_sources_is_two_events() -> None:
    pipeline = InMemoryPipeline(CATALOG)
    first, _ = validate(cloudevent(LATENCY_DATA, id="alert-1", source="monitor"), pipeline)
    second, _ = validate(cloudevent(LATENCY_DATA, id="alert-1", source="probes.example"), pipeline)
    assert (first.outcome, second.outcome) == (Outcome.APPLIED, Outcome.APPLIED)
    assert first.envelope is not None
    assert second.envelope is not None
    assert first.envelope.run_id != second.envelope.run_id
    assert first.published[0].id != second.published[0].id
    assert validate(cloudevent(LATENCY_DATA, id="alert-1", source="monitor"), pipeline)[0].outcome is (
        Outcome.DUPLICATE
    )


# --- data forms ---------------------------------------------------------------------------------------


def test_text_data_fills_a_payload_models_data_field() -> None:
    envelope, _ = accepted(cloudevent("Disk full on host-7", type="AlertText", datacontenttype="text/plain"))
    assert envelope.payload == {"data": "Disk full on host-7"}
    assert envelope.datacontenttype == "text/plain"


def test_text_data_for_a_type_that_takes_an_object_is_quarantined_naming_the_type() -> None:
    reason, field = quarantined(cloudevent(json.dumps(LATENCY_DATA), datacontenttype="text/plain"))
    assert reason == (
        "type 'ServiceLatencyIncreased' takes a JSON object as data, not text (its datacontenttype is "
        "not JSON): its payload model has no data field"
    )
    assert field == "data"


def test_a_json_string_as_data_fills_a_data_field_and_is_never_parsed_again() -> None:
    envelope, _ = accepted(cloudevent('{"looks": "like JSON"}', type="AlertText"))
    assert envelope.payload == {"data": '{"looks": "like JSON"}'}
    reason, _ = quarantined(cloudevent(json.dumps(LATENCY_DATA), datacontenttype="application/json"))
    assert reason.startswith("type 'ServiceLatencyIncreased' takes a JSON object as data, not a JSON string")


def test_binary_data_fills_a_base64bytes_data_field() -> None:
    raw = bytes(range(256))
    envelope, fact = accepted(cloudevent(raw, type="Attachment", datacontenttype="application/octet-stream"))
    assert envelope.payload == {"data": base64.b64encode(raw).decode()}
    assert Attachment.model_validate(accepted_event_of(fact).payload).data == raw


@pytest.mark.parametrize(("type_name", "takes"), [(LATENCY, "a JSON object"), ("AlertText", "a JSON value")])
def test_binary_data_for_a_type_without_a_base64bytes_data_field_is_quarantined(
    type_name: str, takes: str
) -> None:
    reason, field = quarantined(cloudevent(b"\x00\xff", type=type_name))
    assert reason.startswith(f"type {type_name!r} takes {takes}")
    assert "not binary data (data_base64)" in reason
    assert field == "data_base64"


def test_text_for_a_type_that_takes_binary_is_quarantined() -> None:
    reason, _ = quarantined(cloudevent("AAEC", type="Attachment"))
    assert reason == "type 'Attachment' takes binary data (data_base64), not a JSON string"


def test_array_data_fills_a_data_field_and_is_validated_by_it() -> None:
    envelope, _ = accepted(cloudevent([3, 1, 4], type="Readings"))
    assert envelope.payload == {"data": [3, 1, 4]}
    reason, _ = quarantined(cloudevent(["three"], type="Readings"))
    assert reason.startswith("payload.data.0: Input should be a valid integer")
    reason, _ = quarantined(cloudevent([3, 1, 4]))
    assert reason.startswith("type 'ServiceLatencyIncreased' takes a JSON object as data, not a JSON array")


def test_a_wrong_datacontenttype_is_quarantined() -> None:
    reason, field = quarantined(cloudevent(LATENCY_DATA, datacontenttype="text/plain"))
    assert reason == "datacontenttype is not JSON, so data is text, a JSON string: it is a JSON object"
    assert field == "datacontenttype"
    reason, field = quarantined(cloudevent(LATENCY_DATA, datacontenttype="json"))
    assert (reason, field) == ("datacontenttype is not a media type (type/subtype)", "datacontenttype")


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "application/vnd.acme+json", None]
)
def test_json_media_types_read_data_as_json(content_type: str | None) -> None:
    attributes = {} if content_type is None else {"datacontenttype": content_type}
    envelope, _ = accepted(cloudevent(LATENCY_DATA, **attributes))
    assert envelope.payload["p99_ms"] == 900.0
    assert envelope.datacontenttype == content_type


def test_no_data_for_a_type_that_needs_some_is_quarantined_naming_the_type() -> None:
    reason, field = quarantined(cloudevent())
    assert (reason, field) == ("type 'ServiceLatencyIncreased' takes data: this event has none", "data")


# --- what stays quarantined: this workflow's reasons and the trust boundary ---------------------------


def test_an_unregistered_type_is_quarantined() -> None:
    reason, field = quarantined(cloudevent(LATENCY_DATA, type="com.example.object.deleted.v2"))
    assert reason.startswith("unknown type 'com.example.object.deleted.v2'")
    assert field == "type"


def test_a_missing_tenant_is_quarantined() -> None:
    detail = to_dict(cloudevent(LATENCY_DATA))
    del detail["tenantid"]
    pipeline = InMemoryPipeline(CATALOG)
    result = pipeline.deliver("validate", raw_body(detail, detail_type=LATENCY, source="monitor"))
    assert result.outcome is Outcome.QUARANTINED
    assert pipeline.quarantine.records[-1]["reason"].startswith("tenant_id: Field required")


def test_a_cloudevent_cannot_claim_the_pipelines_source_or_facts() -> None:
    # The attack: a producer sends a CloudEvent as the pipeline, or a pipeline fact's type.
    reason, field = quarantined(cloudevent(LATENCY_DATA, source=facts.PIPELINE_SOURCE))
    assert field == "source"
    assert "reserved for the pipeline" in reason
    reason, field = quarantined(cloudevent(LATENCY_DATA, type=facts.EVENT_ACCEPTED, comexampleorigin="x"))
    assert (field, reason) == (
        "type",
        "type 'EventAccepted' is a pipeline fact; only the pipeline publishes it",
    )


def test_a_cloudevents_source_must_be_the_source_it_was_sent_as() -> None:
    # The attack: EventBridge's Source is pinned by the producer's policy; the CloudEvent claims another.
    detail = to_dict(cloudevent(LATENCY_DATA, source="billing.example"))
    pipeline = InMemoryPipeline(CATALOG)
    result = pipeline.deliver("validate", raw_body(detail, detail_type=LATENCY, source="monitor"))
    assert result.outcome is Outcome.QUARANTINED
    assert pipeline.quarantine.records[-1]["field"] == "source"


def test_the_tenant_of_a_cloudevent_is_bound_by_producer_bindings() -> None:
    # The attack: a producer bound to acme names another tenant in the tenantid extension.
    pipeline = InMemoryPipeline(CATALOG, producers=ProducerBindings.parse("monitor=acme"))
    ok, _ = validate(cloudevent(LATENCY_DATA, comexampleorigin="x"), pipeline)
    assert ok.outcome is Outcome.APPLIED
    other, _ = validate(cloudevent(LATENCY_DATA, tenantid="globex"), pipeline)
    assert other.outcome is Outcome.QUARANTINED
    assert pipeline.quarantine.records[-1]["field"] == "tenant_id"


def test_an_extension_cannot_smuggle_a_workflow_field_past_its_checks() -> None:
    # The workflow's own extension attributes are read as the envelope's fields, with their checks.
    reason, field = quarantined(cloudevent(LATENCY_DATA, depth=-1))
    assert field == "depth"
    assert reason.startswith("depth: Input should be greater than or equal to 0")


# --- a whole run --------------------------------------------------------------------------------------


def test_an_event_with_a_long_id_runs_to_completion_with_its_extension_on_every_fact() -> None:
    pipeline = InMemoryPipeline(Catalog([orders.workflow]))
    placed = CloudEvent(
        {
            "type": "OrderPlaced",
            "source": "shop.example",
            "id": "orders/" + "é" * 600,
            "tenantid": "acme",
            "comexampleorigin": "shop-eu",
            "traceparent": TRACEPARENT,
        },
        {"order_id": "o-1", "amount": 3},
    )
    pipeline.run(body(placed))
    published = pipeline.bus.published
    assert facts.WORKFLOW_COMPLETED in {envelope.type for envelope in published}
    # the producer's extension on every fact; the run's last outcome also marked as its last
    last = {envelope.id for envelope in published if RUN_ENDED in envelope.extensions}
    assert [envelope.type for envelope in published if envelope.id in last] == ["OrderShipped"]
    assert all(
        envelope.extensions
        == {"comexampleorigin": "shop-eu", **({RUN_ENDED: True} if envelope.id in last else {})}
        for envelope in published
    )
    assert all(envelope.traceparent == TRACEPARENT for envelope in published)


# --- the producer client ------------------------------------------------------------------------------


def test_the_producer_client_sends_a_structured_cloudevent_and_refuses_what_validate_would_quarantine() -> (
    None
):
    client = FakeEvents()
    producer = Producer(
        cast("EventBridgeClient", client), "intentbus-ingress-test", source="monitor", types=CATALOG.types
    )
    good = json.loads(to_structured(cloudevent(LATENCY_DATA, comexampleorigin="probe"))[1])
    text = json.loads(to_structured(cloudevent("just text", datacontenttype="text/plain"))[1])
    report = producer.send([good, text])
    assert [accepted.index for accepted in report.accepted] == [0]
    assert [refused.index for refused in report.refused] == [1]
    assert report.refused[0].reason.startswith("type 'ServiceLatencyIncreased' takes a JSON object as data")
    (sent,) = client.requests[0]
    assert json.loads(sent["Detail"])["comexampleorigin"] == "probe"


def test_the_producer_client_refuses_the_pipelines_run_ended_mark_before_sending() -> None:
    """The attack validate quarantines (a producer marking its input as its run's end, which would keep
    every outcome of the run from decide), refused by the client before anything is sent."""
    client = FakeEvents()
    producer = Producer(
        cast("EventBridgeClient", client), "intentbus-ingress-test", source="monitor", types=CATALOG.types
    )
    marked = {**json.loads(to_structured(cloudevent(LATENCY_DATA))[1]), RUN_ENDED: True}
    report = producer.send([marked])
    assert report.accepted == ()
    (refused,) = report.refused
    assert refused.reason.startswith(f"{RUN_ENDED} is set by the pipeline")
    assert client.requests == []
