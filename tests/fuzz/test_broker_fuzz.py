"""Whatever a Kafka record or a RabbitMQ message holds, the ingress quarantines or accepts it: it never
raises for a record (which would fail, and redeliver, its whole batch) and never accepts one for a tenant
or source its channel is not bound to."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intentbus.broker_messages import messages
from intentbus.journal import Outcome
from tests.unit.test_broker_ingress import MQ_ARN, MSK_ARN, PAYLOAD, Ingress, envelope

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
texts = st.text(max_size=30)
bodies = st.one_of(
    json_values.map(lambda v: base64.b64encode(json.dumps(v).encode()).decode()),
    st.binary(max_size=60).map(lambda b: base64.b64encode(b).decode()),
    texts,
    st.just(base64.b64encode(json.dumps(envelope("evt-f")).encode()).decode()),
    st.builds(
        lambda tenant, source: base64.b64encode(
            json.dumps(envelope("evt-g", tenant=tenant, source=source)).encode()
        ).decode(),
        st.sampled_from(["acme", "globex", "org_other"]),
        st.sampled_from(["monitoring.example", "crm.example", "intentbus.pipeline", "intentbus.workflow"]),
    ),
)
header_names = st.sampled_from(
    ["ce_id", "ce_source", "ce_type", "ce_tenantid", "ce_specversion", "content-type", "ce_data", "x"]
)
kafka_headers = st.lists(
    st.dictionaries(header_names, st.lists(st.integers(-128, 255), max_size=12), min_size=1, max_size=2),
    max_size=5,
)
kafka_records = st.fixed_dictionaries(
    {"topic": st.sampled_from(["incidents", "elsewhere"]), "partition": st.integers(0, 3)},
    optional={
        "offset": st.integers(0, 10**6) | texts,
        "timestamp": st.integers() | texts,
        "timestampType": texts,
        "key": st.none() | texts,
        "value": bodies | json_values,
        "headers": kafka_headers | json_values,
    },
)
rmq_messages = st.fixed_dictionaries(
    {},
    optional={
        "basicProperties": st.fixed_dictionaries(
            {},
            optional={
                "messageId": st.none() | texts,
                "contentType": st.none() | st.sampled_from(["application/json", "text/plain"]) | texts,
                "headers": st.none()
                | st.dictionaries(
                    st.sampled_from(["cloudEvents_id", "cloudEvents:tenantid", "cloudEvents_source", "n"]),
                    st.builds(lambda b: {"bytes": b}, st.lists(st.integers(-300, 300), max_size=10))
                    | json_values,
                    max_size=3,
                )
                | json_values,
            },
        )
        | json_values,
        "redelivered": st.booleans(),
        "data": bodies | json_values,
    },
)


def accepted_ok(ingress: Ingress) -> None:
    crashed = [r for r in ingress.reasons() if r.startswith("the record could not be processed")]
    assert not crashed, "a record was read by code that raised: every reason should be told"
    for published in ingress.bus.published:
        event = published.payload["event"]
        assert (event["tenant_id"], event["source"]) == ("acme", "monitoring.example"), event


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(kafka_records, min_size=1, max_size=5))
def test_any_kafka_record_is_accepted_or_quarantined(records: list[dict[str, Any]]) -> None:
    ingress = Ingress("kafka:incidents=acme from monitoring.example")
    event = {"eventSource": "aws:kafka", "eventSourceArn": MSK_ARN, "records": {"incidents-0": records}}
    outcomes = [ingress.core.ingest(message).outcome for message in messages(event)]
    assert len(outcomes) == len(records)
    assert set(outcomes) <= {Outcome.APPLIED, Outcome.DUPLICATE, Outcome.QUARANTINED}
    assert outcomes.count(Outcome.QUARANTINED) == len(ingress.quarantine.records)
    accepted_ok(ingress)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rmq_messages, min_size=1, max_size=5))
def test_any_rabbitmq_message_is_accepted_or_quarantined(batch: list[Any]) -> None:
    ingress = Ingress("rabbitmq:alerts=acme from monitoring.example")
    event = {"eventSource": "aws:rmq", "eventSourceArn": MQ_ARN, "rmqMessagesByQueue": {"alerts::/": batch}}
    outcomes = [ingress.core.ingest(message).outcome for message in messages(event)]
    assert len(outcomes) == len(batch)
    assert set(outcomes) <= {Outcome.APPLIED, Outcome.DUPLICATE, Outcome.QUARANTINED}
    accepted_ok(ingress)


def test_payload_constant_is_a_valid_payload() -> None:
    ingress = Ingress("rabbitmq:alerts=acme from monitoring.example")
    data = base64.b64encode(json.dumps(envelope("evt-1") | {"payload": PAYLOAD}).encode()).decode()
    event = {"eventSource": "aws:rmq", "rmqMessagesByQueue": {"alerts::/": [{"data": data}]}}
    assert [ingress.core.ingest(m).outcome for m in messages(event)] == [Outcome.APPLIED]
