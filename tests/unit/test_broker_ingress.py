"""Kafka and RabbitMQ records through validate's boundary, fed in the shapes Lambda documents, verbatim.

Kafka offsets and partitions are exercised here over those shapes: no Kafka broker runs on this machine.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from intentbus.broker_bindings import BrokerBindings, Channel
from intentbus.broker_ingress import BrokerIngress
from intentbus.broker_messages import NotABrokerEvent, messages
from intentbus.errors import ConfigurationError
from intentbus.extensions import RUN_ENDED
from intentbus.journal import Outcome
from intentbus.producers import ProducerBindings
from intentbus.stages.common import StageDeps
from intentbus.stages.validate import ValidateStage
from intentbus.testing import InMemoryStore, ListQuarantine, RecordingBus, VirtualClock
from intentbus.workflows import incident

MSK_ARN = "arn:aws:kafka:us-east-1:123456789012:cluster/vpc-2priv-2pub/751d2973-a626-431c-9d4e-d7975eb44dd7-2"
MQ_ARN = "arn:aws:mq:us-west-2:111122223333:broker:test:b-9bcfa592-423a-4942-879d-eb284b418fc8"
BINDINGS = (
    "kafka:incidents=acme from monitoring.example; "
    "rabbitmq:alerts=acme from monitoring.example|pager.example; "
    "rabbitmq:ops::prod=globex from pager.example"
)
PAYLOAD = {
    "service": "checkout-api",
    "cluster": "shop",
    "environment": "dev",
    "p99_ms": 1450.0,
    "threshold_ms": 500.0,
}


def envelope(event_id: str, tenant: str = "acme", **extra: Any) -> dict[str, Any]:
    return {
        "id": event_id,
        "type": "ServiceLatencyIncreased",
        "source": "monitoring.example",
        "tenant_id": tenant,
        "payload": PAYLOAD,
    } | extra


def b64(value: Any) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.b64encode(raw).decode()


def header(name: str, value: str) -> dict[str, list[int]]:
    return {name: list(value.encode())}


def kafka_record(
    offset: int, value: Any, *, headers: list[dict[str, list[int]]] | None = None
) -> dict[str, Any]:
    return {
        "topic": "incidents",
        "partition": 0,
        "offset": offset,
        "timestamp": 1545084650987,
        "timestampType": "CREATE_TIME",
        "key": "cmVjb3JkS2V5",
        "value": value if isinstance(value, str) else b64(value),
        "headers": headers if headers is not None else [{"headerKey": [104, 101, 97, 100, 101, 114]}],
    }


def msk_event(*records: dict[str, Any], key: str = "incidents-0") -> dict[str, Any]:
    return {
        "eventSource": "aws:kafka",
        "eventSourceArn": MSK_ARN,
        "bootstrapServers": "b-2.demo-cluster-1.a1bcde.c1.kafka.us-east-1.amazonaws.com:9092,"
        "b-1.demo-cluster-1.a1bcde.c1.kafka.us-east-1.amazonaws.com:9092",
        "records": {key: list(records)},
    }


def rmq_message(
    data: Any, *, message_id: str | None = None, headers: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "basicProperties": {
            "contentType": "application/json",
            "contentEncoding": None,
            "headers": headers if headers is not None else {"numberInHeader": 10},
            "deliveryMode": 1,
            "priority": 34,
            "correlationId": None,
            "replyTo": None,
            "expiration": "60000",
            "messageId": message_id,
            "timestamp": "Jan 1, 1970, 12:33:41 AM",
            "type": None,
            "userId": "AIDACKCEVSQ6C2EXAMPLE",
            "appId": None,
            "clusterId": None,
            "bodySize": 80,
        },
        "redelivered": False,
        "data": data if isinstance(data, str) else b64(data),
    }


def rmq_event(by_queue: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"eventSource": "aws:rmq", "eventSourceArn": MQ_ARN, "rmqMessagesByQueue": by_queue}


class Ingress:
    def __init__(self, bindings: str = BINDINGS) -> None:
        from intentbus.catalog import Catalog

        self.bus = RecordingBus()
        self.quarantine = ListQuarantine()
        self.store = InMemoryStore()
        deps = StageDeps(
            catalog=Catalog.from_modules(incident.__name__),
            bus=self.bus,
            quarantine=self.quarantine,
            clock=VirtualClock(),
            environment="dev",
            producers=ProducerBindings.parse("monitoring.example=*"),  # the bus's: never the brokers'
        )
        self.core = BrokerIngress(ValidateStage(deps, self.store), BrokerBindings.parse(bindings))

    def run(self, event: dict[str, Any]) -> list[Outcome]:
        return [self.core.ingest(message).outcome for message in messages(event)]

    def reasons(self) -> list[str]:
        return [str(record["reason"]) for record in self.quarantine.records]


def test_msk_records_are_accepted_and_poison_among_them_quarantined() -> None:
    ingress = Ingress()
    event = msk_event(
        kafka_record(15, envelope("evt-1")),
        kafka_record(16, "not base64!"),
        kafka_record(17, b"\xff\xfe not utf-8"),
        kafka_record(18, [1, 2, 3]),
        kafka_record(19, envelope("evt-2") | {"payload": {"service": "checkout-api"}}),
        kafka_record(20, envelope("evt-3")),
    )
    outcomes = ingress.run(event)
    assert outcomes == [Outcome.APPLIED, *[Outcome.QUARANTINED] * 4, Outcome.APPLIED]
    assert [out.type for out in ingress.bus.published] == ["EventAccepted", "EventAccepted"]
    assert [record["message_id"] for record in ingress.quarantine.records] == [
        "incidents-0@16",
        "incidents-0@17",
        "incidents-0@18",
        "incidents-0@19",
    ]
    reasons = ingress.reasons()
    assert "value is not base64 text" in reasons[0]
    assert "not JSON" in reasons[1]
    assert "JSON list" in reasons[2]
    assert "payload.p99_ms" in reasons[3]
    kept = json.loads(ingress.quarantine.records[0]["body"])
    assert kept["broker_record"]["value"] == "not base64!"  # the record as delivered: nothing lost
    assert kept["broker_arn"] == MSK_ARN


def test_self_managed_kafka_redelivery_is_a_duplicate() -> None:
    ingress = Ingress()
    event = msk_event(kafka_record(15, envelope("evt-1")))
    event["eventSource"] = "SelfManagedKafka"
    del event["eventSourceArn"]
    assert ingress.run(event) == [Outcome.APPLIED]
    assert ingress.run(event) == [Outcome.DUPLICATE]
    first, again = ingress.bus.published
    assert first.id == again.id  # republished with the same id: downstream dedups it


def test_kafka_cloudevent_binary_mode_headers() -> None:
    ingress = Ingress()
    headers = [
        header("ce_specversion", "1.0"),
        header("ce_id", "ce-1"),
        header("ce_source", "monitoring.example"),
        header("ce_type", "ServiceLatencyIncreased"),
        header("ce_tenantid", "acme"),
        header("content-type", "application/json"),
    ]
    assert ingress.run(msk_event(kafka_record(1, PAYLOAD, headers=headers))) == [Outcome.APPLIED]
    (accepted,) = ingress.bus.published
    assert accepted.payload["event"]["id"] == "ce-1"
    assert accepted.payload["event"]["tenant_id"] == "acme"


def test_kafka_structured_cloudevent() -> None:
    ingress = Ingress()
    event = {
        "specversion": "1.0",
        "id": "ce-2",
        "source": "monitoring.example",
        "type": "ServiceLatencyIncreased",
        "tenantid": "acme",
        "datacontenttype": "application/json",
        "data": PAYLOAD,
    }
    assert ingress.run(msk_event(kafka_record(1, event))) == [Outcome.APPLIED]


def test_attack_kafka_header_claiming_another_tenant_is_quarantined() -> None:
    """The topic is bound to acme; a producer that can write it claims globex in a binary-mode header."""
    ingress = Ingress()
    headers = [
        header("ce_specversion", "1.0"),
        header("ce_id", "ce-evil"),
        header("ce_source", "monitoring.example"),
        header("ce_type", "ServiceLatencyIncreased"),
        header("ce_tenantid", "globex"),
    ]
    assert ingress.run(msk_event(kafka_record(1, PAYLOAD, headers=headers))) == [Outcome.QUARANTINED]
    assert ingress.reasons() == ["kafka:incidents is not bound to tenant 'globex' (BrokerBindings)"]
    assert ingress.bus.published == []


def test_attack_forged_ce_source_is_quarantined() -> None:
    """A binary-mode ``ce_source`` naming a source the topic is not bound to."""
    ingress = Ingress()
    headers = [
        header("ce_specversion", "1.0"),
        header("ce_id", "ce-forged"),
        header("ce_source", "crm.example"),
        header("ce_type", "ServiceLatencyIncreased"),
        header("ce_tenantid", "acme"),
    ]
    assert ingress.run(msk_event(kafka_record(1, PAYLOAD, headers=headers))) == [Outcome.QUARANTINED]
    assert ingress.reasons() == ["kafka:incidents is not bound to source 'crm.example' (BrokerBindings)"]


@pytest.mark.parametrize("source", ["intentbus.pipeline", "intentbus.workflow"])
def test_attack_body_claiming_a_pipeline_source_is_quarantined(source: str) -> None:
    """Even on a channel bound to every source, a broker input never speaks as the pipeline."""
    ingress = Ingress("kafka:incidents=* from *")
    assert ingress.run(msk_event(kafka_record(1, envelope("evt-p", source=source)))) == [Outcome.QUARANTINED]
    assert ingress.reasons() == [f"source {source!r} is reserved for the pipeline"]
    assert ingress.store.logs == {}


def test_attack_body_carrying_the_pipelines_run_ended_mark_is_quarantined() -> None:
    """Copied on to its run's outcomes, the mark would keep each of them from decide: the run would wait
    forever. A broker input may not carry it, as a bus producer's may not."""
    ingress = Ingress()
    marked = envelope("evt-m", extensions={RUN_ENDED: True})
    assert ingress.run(msk_event(kafka_record(1, marked))) == [Outcome.QUARANTINED]
    (reason,) = ingress.reasons()
    assert reason.startswith(f"{RUN_ENDED} is set by the pipeline")
    assert ingress.store.logs == {}


def test_attack_unbound_topic_is_quarantined() -> None:
    ingress = Ingress()
    record = kafka_record(1, envelope("evt-1")) | {"topic": "elsewhere"}
    assert ingress.run(msk_event(record, key="elsewhere-3")) == [Outcome.QUARANTINED]
    assert "kafka:elsewhere is not bound to any tenant" in ingress.reasons()[0]


def test_attack_bus_binding_does_not_open_a_broker_channel() -> None:
    """``ProducerBindings`` lets monitoring.example speak for any tenant on the bus; a queue it is not
    bound to still refuses its tenant."""
    ingress = Ingress()
    by_queue = {"ops::prod": [rmq_message(envelope("evt-1", source="pager.example"))]}
    assert ingress.run(rmq_event(by_queue)) == [Outcome.QUARANTINED]
    assert ingress.reasons() == ["rabbitmq:ops::prod is not bound to tenant 'acme' (BrokerBindings)"]


def test_rabbitmq_messages_by_queue_with_poison_among_them() -> None:
    ingress = Ingress()
    by_queue = {
        "alerts::/": [
            rmq_message(envelope("evt-1"), message_id="m-1"),
            rmq_message("eyJ0aW1lb3V0IjowLCJkYXRhIjoiQ1pybWYwR3c4T3Y0YnFMUXhENEUifQ==", message_id="m-2"),
            rmq_message(envelope("evt-2", source="pager.example")),
        ],
        "ops::prod": [rmq_message(envelope("evt-3", tenant="globex", source="pager.example"))],
    }
    assert ingress.run(rmq_event(by_queue)) == [
        Outcome.APPLIED,
        Outcome.QUARANTINED,
        Outcome.APPLIED,
        Outcome.APPLIED,
    ]
    (poison,) = ingress.quarantine.records
    assert poison["message_id"] == "m-2"
    assert "unknown type" in poison["reason"] or "names no type" in poison["reason"]


def test_rabbitmq_amqp_binding_headers_and_the_channels_only_source() -> None:
    ingress = Ingress("rabbitmq:alerts=acme from pager.example")
    headers = {
        "cloudEvents_specversion": {"bytes": list(b"1.0")},
        "cloudEvents_id": {"bytes": list(b"amqp-1")},
        "cloudEvents_type": {"bytes": list(b"ServiceLatencyIncreased")},
        "cloudEvents_tenantid": {"bytes": list(b"acme")},
    }
    message = rmq_message(PAYLOAD, headers=headers)  # no source: the queue binds exactly one
    assert ingress.run(rmq_event({"alerts::/": [message]})) == [Outcome.APPLIED]
    (accepted,) = ingress.bus.published
    assert accepted.payload["event"]["source"] == "pager.example"


class Throttled:
    """A store whose every write is throttled (after the SDK's own retries)."""

    def __init__(self, store: InMemoryStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def commit(self, commit: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "TransactWriteItems"
        )


def test_throttling_fails_the_invocation_and_redelivery_is_harmless() -> None:
    ingress = Ingress()
    event = rmq_event({"alerts::/": [rmq_message(envelope("evt-1")), rmq_message(envelope("evt-2"))]})
    assert ingress.run(rmq_event({"alerts::/": [rmq_message(envelope("evt-1"))]})) == [Outcome.APPLIED]
    ingress.core.validate.store = Throttled(ingress.store)
    with pytest.raises(ClientError):
        ingress.run(event)
    assert ingress.quarantine.records == []  # nothing quarantined for AWS's fault
    ingress.core.validate.store = ingress.store
    assert ingress.run(event) == [Outcome.DUPLICATE, Outcome.APPLIED]  # the whole batch again


def test_a_bug_on_one_record_quarantines_it_and_spares_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    ingress = Ingress()
    calls = {"n": 0}
    real = ingress.core.validate.admit

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyError("a bug")
        return real(*args, **kwargs)

    monkeypatch.setattr(ingress.core.validate, "admit", flaky)
    event = msk_event(kafka_record(1, envelope("evt-1")), kafka_record(2, envelope("evt-2")))
    assert ingress.run(event) == [Outcome.QUARANTINED, Outcome.APPLIED]
    assert ingress.reasons() == ["the record could not be processed: KeyError (see the function's log)"]


def test_an_event_of_another_shape_fails_the_invocation() -> None:
    with pytest.raises(NotABrokerEvent):
        list(messages({"Records": [{"eventSource": "aws:sqs"}]}))
    with pytest.raises(NotABrokerEvent):
        list(messages({"eventSource": "aws:rmq", "rmqMessagesByQueue": ["not", "keyed"]}))


def test_bindings_parse_and_refuse_bad_configuration() -> None:
    bindings = BrokerBindings.parse(BINDINGS)
    assert bindings.refuses(Channel.rabbitmq("alerts"), source="pager.example", tenant_id="acme") is None
    assert (
        bindings.refuses(Channel.rabbitmq("ops", "prod"), source="pager.example", tenant_id="globex") is None
    )
    for bad in ("kafka:t=acme", "sqs:q=acme from s", "kafka:t=Not A Tenant from s", "kafka:t=acme from "):
        with pytest.raises(ConfigurationError):
            BrokerBindings.parse(bad)


def test_kafka_partitions_and_offsets_name_each_record_and_the_topic_binds() -> None:
    """Records of two partitions of a hyphenated topic: each is named by its partition and offset, all
    are bound by the topic (the partition is no part of the binding)."""
    ingress = Ingress("kafka:orders-eu-1=acme from monitoring.example")

    def record(partition: int, offset: int, value: Any) -> dict[str, Any]:
        return kafka_record(offset, value) | {"topic": "orders-eu-1", "partition": partition}

    event = msk_event()
    event["records"] = {
        "orders-eu-1-0": [record(0, 7, envelope("evt-p0")), record(0, 8, "%%%")],
        "orders-eu-1-3": [record(3, 41, envelope("evt-p3"))],
    }
    found = list(messages(event))
    assert [m.message_id for m in found] == ["orders-eu-1-0@7", "orders-eu-1-0@8", "orders-eu-1-3@41"]
    assert {str(m.channel) for m in found} == {"kafka:orders-eu-1"}
    assert [ingress.core.ingest(m).outcome for m in found] == [
        Outcome.APPLIED,
        Outcome.QUARANTINED,
        Outcome.APPLIED,
    ]


def test_attack_structured_cloudevent_claiming_another_tenant_is_quarantined() -> None:
    ingress = Ingress()
    event = {
        "specversion": "1.0",
        "id": "ce-evil",
        "source": "monitoring.example",
        "type": "ServiceLatencyIncreased",
        "tenantid": "globex",
        "data": PAYLOAD,
    }
    assert ingress.run(msk_event(kafka_record(1, event))) == [Outcome.QUARANTINED]
    assert ingress.reasons() == ["kafka:incidents is not bound to tenant 'globex' (BrokerBindings)"]
