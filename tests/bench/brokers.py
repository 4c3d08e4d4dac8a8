"""The broker ingress's own cost per record, against validate reading the same input from the bus.

``measure()`` returns (every figure a median of ``repeats`` runs over ``records`` distinct inputs, the
stores and the bus in memory, so what is timed is the ingress's code and validate's):

- ``bus_validate_ms_per_record``: ``ValidateStage.handle`` of the EventBridge body SQS would deliver;
- ``kafka_ms_per_record`` / ``rabbitmq_ms_per_record``: ``BrokerIngress.ingest`` of the same input as an
  ``aws:kafka`` record / an ``aws:rmq`` message (decoding, the bus event it stands for, validate);
- ``kafka_ratio`` / ``rabbitmq_ratio``: those over ``bus_validate_ms_per_record``, same run.

``measure(with_server=True)`` adds ``rabbitmq_boot_seconds``: starting a RabbitMQ of its own until it
takes a connection (needs Debian's rabbitmq-server).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from intentbus.broker_messages import messages
from tests.fakes import raw_body
from tests.unit.test_broker_ingress import MQ_ARN, MSK_ARN, Ingress, envelope, kafka_record, rmq_message


def _per_record(run: Callable[[], int], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        count = run()
        times.append((time.perf_counter() - started) * 1000 / count)
    return statistics.median(times)


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
    if with_server:
        from intentbus_local.rabbitmq_server import RabbitMqServer

        started = time.perf_counter()
        with RabbitMqServer():
            figures["rabbitmq_boot_seconds"] = time.perf_counter() - started
    return figures


if __name__ == "__main__":
    print(json.dumps(measure(with_server=True), indent=2))
