"""The producer client on moto: what it accepts arrives on the ingress queue as validate will read it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from intentbus.catalog import Catalog
from intentbus.inbound import normalize, parse_bus_event
from intentbus.producer import Producer, SendError
from tests.integration.conftest_moto import (
    as_lambda_body,
    aws,  # noqa: F401
    client,
    create_queue,
    drain,
    route_to_queue,
)

INGRESS = "intentbus-ingress-test"
SOURCE = "monitoring.example"
CATALOG = Catalog.from_modules("intentbus.workflows.incident,intentbus.workflows.direct_tool")


def latency(n: int, **overrides: Any) -> dict[str, Any]:
    payload = {"service": "checkout-api", "cluster": "shop", "environment": "production"}
    return {
        "id": f"evt-{n:02d}",
        "tenant_id": "acme",
        "type": "ServiceLatencyIncreased",
        "payload": {**payload, "p99_ms": 1000 + n, "threshold_ms": 500},
        **overrides,
    }


@pytest.fixture
def ingress(aws: None) -> tuple[Any, Any, str]:  # noqa: F811
    events, sqs = client("events"), client("sqs")
    events.create_event_bus(Name=INGRESS)
    url, arn = create_queue(sqs, "validate")
    # The template's IngressRule: every event on the ingress goes to validate.
    route_to_queue(events, bus=INGRESS, rule="ingress", pattern={"source": [{"prefix": ""}]}, queue_arn=arn)
    return events, sqs, url


def test_what_the_producer_accepts_arrives_as_validate_reads_it(ingress: tuple[Any, Any, str]) -> None:
    events, sqs, url = ingress
    sleeps: list[float] = []
    producer = Producer(events, INGRESS, source=SOURCE, types=CATALOG.types, sleep=sleeps.append)
    sent = [latency(n) for n in range(12)]
    sent.insert(3, latency(99, payload={"service": "checkout-api"}))  # refused: the model wants more
    sent.insert(7, latency(98, source="crm.example"))  # refused: not this producer's source

    report = producer.send(sent)

    assert [item.index for item in report.refused] == [3, 7]
    assert report.refused[0].reason.startswith("payload.cluster: Field required")
    assert report.refused[1].field == "source"
    assert len(report.accepted) == 12
    assert report.requests == 2  # 12 entries: 10 + 2
    assert sleeps == []

    delivered = [json.loads(message["Body"]) for message in drain(sqs, url)]
    assert len(delivered) == 12
    by_id = {event["id"]: event for event in delivered}
    assert set(by_id) == set(report.event_ids.values())  # the EventIds the report gives are the events
    for index, event_id in report.event_ids.items():
        event = by_id[event_id]
        assert event["source"] == SOURCE
        assert event["detail-type"] == "ServiceLatencyIncreased"
        assert event["detail"] == sent[index]
    for event in delivered:  # and validate accepts every one of them
        envelope, _ = normalize(parse_bus_event(as_lambda_body(json.dumps(event))), CATALOG.types)
        assert envelope.source == SOURCE
        assert envelope.tenant_id == "acme"


def test_an_unknown_bus_raises_one_error_and_sends_nothing(ingress: tuple[Any, Any, str]) -> None:
    events, sqs, url = ingress
    producer = Producer(events, "no-such-bus", source=SOURCE, types=CATALOG.types)

    with pytest.raises(SendError, match="ResourceNotFoundException") as raised:
        producer.send([latency(0), latency(1)])

    assert raised.value.unsent == (0, 1)
    assert raised.value.report.accepted == ()
    assert drain(sqs, url) == []
