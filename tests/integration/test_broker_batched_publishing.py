"""The broker ingress puts a batch's facts on the bus together (intentbus.outbox), on moto, with the
records Lambda delivers: as few PutEvents as AWS's 10 entries per request allow, and a fact the bus did
not accept fails the invocation so that the redelivered batch publishes it (nothing is lost)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from aws_lambda_powertools import Logger, Metrics
from botocore.exceptions import ClientError

from intentbus.adapters.clients import AwsClients
from intentbus.broker_ingress import BINDINGS_VARIABLE, BrokerIngressHandler
from intentbus.config import Settings
from intentbus.errors import PublishError
from intentbus.runtime import Runtime
from intentbus_faults.calls import Call, CallLog, Proceed, recording
from tests.integration.conftest_moto import (  # noqa: F401  (fixtures)
    Resources,
    aws,
    client,
    drain,
    lambda_context,
    resources,
    shared_session,
)
from tests.unit.test_broker_ingress import (
    envelope,
    kafka_record,
    msk_event,
    rmq_event,
    rmq_message,
)

WRITES = ("PutItem", "UpdateItem", "TransactWriteItems", "BatchWriteItem")
REFUSED_ID = "evt-refused"
"""The input whose fact EventBridge refuses, entry by entry, every time it is offered."""


@pytest.fixture
def ingress(resources: Resources, monkeypatch: pytest.MonkeyPatch) -> Iterator[BrokerIngressHandler]:  # noqa: F811
    monkeypatch.setenv(
        BINDINGS_VARIABLE,
        "kafka:incidents=acme from monitoring.example; rabbitmq:alerts=acme from monitoring.example",
    )
    runtime = Runtime(Settings.from_env(os.environ), AwsClients(shared_session()))
    monkeypatch.setattr(runtime.events, "_sleep", lambda seconds: None)  # the bus's backoff, not waited here
    metrics = Metrics(namespace="broker-outbox", service="broker-outbox")
    metrics.clear_metrics()  # Powertools shares them between instances: other tests' values are not ours
    yield BrokerIngressHandler(
        logger=Logger(service="broker-outbox"), tracer=None, metrics=metrics, runtime=lambda: runtime
    )
    metrics.clear_metrics()


def refuse_one_fact(call: Call, proceed: Proceed) -> Any:
    """PutEvents as EventBridge answers a partial failure: the other entries are put, this one is not."""
    if call.operation != "PutEvents":
        return proceed(call.params)
    entries = call.params["Entries"]
    refused = [REFUSED_ID in entry["Detail"] for entry in entries]
    put = [entry for entry, no in zip(entries, refused, strict=True) if not no]
    accepted = iter(proceed({**call.params, "Entries": put})["Entries"])
    refusal = {"ErrorCode": "InternalFailure", "ErrorMessage": "try again"}
    results = [refusal if no else next(accepted) for no in refused]
    return {"FailedEntryCount": sum(refused), "Entries": results}


def accepted_on_the_bus() -> list[str]:
    """The input ids of the EventAccepted facts that reached the bus, in order."""
    bodies = [json.loads(message["Body"]) for message in drain(client("sqs"), _url("intentbus-sink"))]
    return [
        body["detail"]["payload"]["event"]["id"] for body in bodies if body["detail-type"] == "EventAccepted"
    ]


def _url(queue: str) -> str:
    """A queue of the ``resources`` fixture (conftest_moto)."""
    return str(client("sqs").get_queue_url(QueueName=queue)["QueueUrl"])


def quarantined() -> int:
    return len(drain(client("sqs"), _url("intentbus-quarantine")))


def test_a_kafka_batch_of_twelve_inputs_and_a_poison_record_makes_two_put_events(
    ingress: BrokerIngressHandler,
) -> None:
    good = [kafka_record(offset, envelope(f"evt-{offset}")) for offset in range(12)]
    event = msk_event(*good[:6], kafka_record(99, "!poison"), *good[6:])
    with recording(CallLog()) as log:
        assert ingress.handle(event, lambda_context()) == {"batchItemFailures": []}
    assert log.count("events", "PutEvents") == 2  # 12 facts: 10 + 2, where each record once made its own
    assert sorted(accepted_on_the_bus()) == sorted(f"evt-{offset}" for offset in range(12))
    assert quarantined() == 1


def test_attack_a_fact_the_bus_refuses_fails_the_invocation_and_the_redelivery_publishes_it(
    ingress: BrokerIngressHandler,
) -> None:
    """Acknowledging this batch would drop evt-refused's fact for good: its input is already recorded, so
    nothing but a redelivery would publish it."""
    event = rmq_event(
        {
            "alerts::/": [
                rmq_message(envelope("evt-1"), message_id="m-1"),
                rmq_message("!poison", message_id="m-2"),
                rmq_message(envelope(REFUSED_ID), message_id="m-3"),
                rmq_message(envelope("evt-4"), message_id="m-4"),
            ]
        }
    )
    with recording(CallLog(), interceptors=(refuse_one_fact,)) as log, pytest.raises(PublishError):
        ingress.handle(event, lambda_context())
    assert (
        log.count("events", "PutEvents") == 5
    )  # the batch's one request, then the refused entry 4 more times
    assert accepted_on_the_bus() == ["evt-1", "evt-4"]

    with recording(CallLog()) as log:  # Amazon MQ delivers the whole batch again
        assert ingress.handle(event, lambda_context()) == {"batchItemFailures": []}
    assert log.count("events", "PutEvents") == 1
    assert accepted_on_the_bus() == ["evt-1", REFUSED_ID, "evt-4"]  # same ids: downstream dedups
    assert quarantined() == 2  # the poison record, each time it was delivered


def test_an_infrastructure_error_mid_batch_still_sends_the_facts_of_the_inputs_already_accepted(
    ingress: BrokerIngressHandler,
) -> None:
    """If the batch were never delivered again (the mapping's retries exhausted), evt-1 and evt-2, already
    recorded, would otherwise never reach the bus."""

    writes: list[Call] = []

    def throttle_the_third_write(call: Call) -> Exception | None:
        if call.service == "dynamodb" and call.operation in WRITES:
            writes.append(call)
            if len(writes) == 3:  # evt-3's: validate records each input in one write
                return ClientError(
                    {"Error": {"Code": "ThrottlingException", "Message": "slow"}}, call.operation
                )
        return None

    event = msk_event(*(kafka_record(offset, envelope(f"evt-{offset}")) for offset in (1, 2, 3, 4)))
    with recording(CallLog(), faults=(throttle_the_third_write,)) as log, pytest.raises(ClientError):
        ingress.handle(event, lambda_context())
    assert log.count("events", "PutEvents") == 1
    assert accepted_on_the_bus() == ["evt-1", "evt-2"]

    with recording(CallLog()) as log:
        assert ingress.handle(event, lambda_context()) == {"batchItemFailures": []}
    assert log.count("events", "PutEvents") == 1
    assert accepted_on_the_bus() == ["evt-1", "evt-2", "evt-3", "evt-4"]


def test_each_broker_record_writes_the_compact_record_line_with_its_channel(
    ingress: BrokerIngressHandler,
) -> None:
    """One line a record, as the stages write it (intentbus.record_log): the ids an operator follows a
    record by, the invocation's request id, and not the Lambda context's keys repeated on every line."""
    ingress.logger = Logger(service="broker-record-line")
    written = io.StringIO()
    ingress.logger.registered_handler.setStream(written)  # type: ignore[attr-defined]
    event = msk_event(kafka_record(1, envelope("evt-1")), kafka_record(2, "!poison"))

    ingress.handle(event, lambda_context())

    lines = [json.loads(line) for line in written.getvalue().splitlines()]
    processed = [line for line in lines if line["message"] == "record processed"]
    assert [line["outcome"] for line in processed] == ["applied", "quarantined"]
    for line in processed:
        assert line["stage"] == "ingress"
        assert line["channel"].startswith("kafka:")
        assert line["service"] == "broker-record-line"
        assert line["function_request_id"]
        assert "cold_start" not in line
        assert "function_memory_size" not in line
    assert processed[0]["tenant_id"] == "acme"
    assert processed[1]["reason"]
