"""The broker ingress's own cost per record, against validate reading the same input from the bus.

``measure()`` returns (every figure a median of ``repeats`` runs over ``records`` distinct inputs, the
stores and the bus in memory, so what is timed is the ingress's code and validate's):

- ``bus_validate_ms_per_record``: ``ValidateStage.handle`` of the EventBridge body SQS would deliver;
- ``kafka_ms_per_record`` / ``rabbitmq_ms_per_record``: ``BrokerIngress.ingest`` of the same input as an
  ``aws:kafka`` record / an ``aws:rmq`` message (decoding, the bus event it stands for, validate);
- ``kafka_ratio`` / ``rabbitmq_ratio``: those over ``bus_validate_ms_per_record``, same run;
- ``kafka_put_events_per_batch``: the PutEvents requests one Kafka batch of ``KAFKA_BATCH`` accepted inputs
  (the template's default ``KafkaBatchSize``) makes through the function's handler, its facts held in the
  outbox and sent together (intentbus.outbox); EventBridge is a counting stand-in.

``measure(with_server=True)`` adds ``rabbitmq_boot_seconds``: starting a RabbitMQ of its own until it
takes a connection (needs Debian's rabbitmq-server).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from intentbus.adapters.eventbridge_bus import EventBridgeBus
from intentbus.broker_ingress import BrokerIngressHandler
from intentbus.broker_messages import messages
from intentbus.outbox import Outbox
from tests.fakes import raw_body
from tests.unit.test_broker_ingress import MQ_ARN, MSK_ARN, Ingress, envelope, kafka_record, rmq_message


def _per_record(run: Callable[[], int], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        count = run()
        times.append((time.perf_counter() - started) * 1000 / count)
    return statistics.median(times)


KAFKA_BATCH = 100


class _CountingEvents:
    """EventBridge accepting every entry, counting the requests."""

    def __init__(self) -> None:
        self.requests = 0

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.requests += 1
        return {"FailedEntryCount": 0, "Entries": [{"EventId": f"e-{n}"} for n in range(len(Entries))]}


def put_events_per_batch(records: int = KAFKA_BATCH) -> int:
    events = _CountingEvents()
    bus = EventBridgeBus("pipeline", events, outbox=Outbox())  # type: ignore[arg-type]
    core = Ingress().core
    core.validate.deps = dataclasses.replace(core.validate.deps, bus=bus)
    metrics = Metrics(namespace="bench-brokers", service="bench-brokers")
    handler = BrokerIngressHandler(
        logger=Logger(service="bench-brokers", level="WARNING"),
        tracer=None,
        metrics=metrics,
        build=lambda runtime: core,
        runtime=lambda: None,
        events=bus,
    )
    batch = [kafka_record(n, envelope(f"evt-batch-{n}")) for n in range(records)]
    event = {"eventSource": "aws:kafka", "eventSourceArn": MSK_ARN, "records": {"incidents-0": batch}}
    with contextlib.redirect_stdout(io.StringIO()):  # the EMF lines Powertools flushes every 100 values
        handler.handle(event, None)  # type: ignore[arg-type]
    metrics.clear_metrics()  # Powertools shares them between instances
    return events.requests


def measure(*, records: int = 200, repeats: int = 5, with_server: bool = False) -> dict[str, float]:
    bodies = [envelope(f"evt-bench-{n}") for n in range(records)]
    sqs_bodies = [raw_body(detail, detail_type="ServiceLatencyIncreased") for detail in bodies]
    kafka_event = {
        "eventSource": "aws:kafka",
        "eventSourceArn": MSK_ARN,
        "records": {"incidents-0": [kafka_record(n, detail) for n, detail in enumerate(bodies)]},
    }
    rmq_event = {
        "eventSource": "aws:rmq",
        "eventSourceArn": MQ_ARN,
        "rmqMessagesByQueue": {
            "alerts::/": [rmq_message(d, message_id=str(n)) for n, d in enumerate(bodies)]
        },
    }

    def bus() -> int:
        validate = Ingress().core.validate
        for body in sqs_bodies:
            validate.handle(body)
        return len(sqs_bodies)

    def broker(event: dict[str, Any]) -> Callable[[], int]:
        def run() -> int:
            ingress = Ingress()
            count = 0
            for message in messages(event):
                ingress.core.ingest(message)
                count += 1
            return count

        return run

    base = _per_record(bus, repeats)
    figures = {
        "bus_validate_ms_per_record": base,
        "kafka_ms_per_record": _per_record(broker(kafka_event), repeats),
        "rabbitmq_ms_per_record": _per_record(broker(rmq_event), repeats),
    }
    figures["kafka_ratio"] = figures["kafka_ms_per_record"] / base
    figures["rabbitmq_ratio"] = figures["rabbitmq_ms_per_record"] / base
    figures["kafka_put_events_per_batch"] = put_events_per_batch()
    if with_server:
        from intentbus_local.rabbitmq_server import RabbitMqServer

        started = time.perf_counter()
        with RabbitMqServer():
            figures["rabbitmq_boot_seconds"] = time.perf_counter() - started
    return figures


if __name__ == "__main__":
    print(json.dumps(measure(with_server=True), indent=2))
