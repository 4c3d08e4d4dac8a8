"""Producer input through a real RabbitMQ (Debian's rabbitmq-server, started here on free ports) and the
template's Amazon MQ mapping, played by the local cloud: batching, acknowledgement only after the function
succeeded, redelivery of a failed batch, and the same outcomes as the bus for the same inputs."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status
from intentbus_cli import local
from intentbus_cli.project import resolve
from intentbus_local import rabbitmq_ingress, seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.lambda_runtime import Invocation
from intentbus_local.rabbitmq_server import RabbitMqServer, installed

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "infra" / "events" / "sample.jsonl"


@pytest.fixture(scope="module")
def rabbitmq() -> Iterator[RabbitMqServer]:
    if not installed() and not os.environ.get("CI"):
        pytest.skip("rabbitmq-server is not installed (apt-get install rabbitmq-server); CI installs it")
    with RabbitMqServer() as server:
        yield server


def send(url: str, queue: str, body: dict[str, Any], message_id: str, *, declare: bool = True) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = connection.channel()
        channel.queue_declare(queue=queue, durable=True, passive=not declare)
        rabbitmq_ingress.publish_json(channel, queue, body, message_id)
    finally:
        connection.close()


def depth(url: str, queue: str) -> int:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        declared = connection.channel().queue_declare(queue=queue, durable=True, passive=True)
        return int(declared.method.message_count)
    finally:
        connection.close()


def test_incident_from_a_rabbitmq_message_to_recovery(rabbitmq: RabbitMqServer, tmp_path: Path) -> None:
    queue = rabbitmq_ingress.new_queue()
    parameters = rabbitmq_ingress.stack_parameters(queue)
    with LocalCloud(mode="server", logs_dir=tmp_path / "logs", parameters=parameters) as cloud:
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        event = seed.latency_event()
        send(rabbitmq.url, queue, event, "m-incident-1")

        with rabbitmq_ingress.mapping(cloud, rabbitmq.url) as mapping:
            (batch,) = mapping.drain()
            (records,) = batch.invocation.event["rmqMessagesByQueue"].values()
        assert batch.acknowledged
        assert batch.invocation.event["eventSource"] == "aws:rmq"
        assert records[0]["basicProperties"]["messageId"] == "m-incident-1"
        assert depth(rabbitmq.url, queue) == 0  # acknowledged after the function succeeded
        summary = cloud.run_until_idle(max_invocations=100)

        assert summary.idle
        store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        (run,) = store.runs(str(event["tenant_id"]))
        assert run.status is Status.COMPLETED
        assert seed.desired_count(cloud.clients) == 4
        entries = store.entries(run.tenant_id, run.run_id)
        accepted = [entry.input_type for entry in entries if entry.stage == "validate"]
        assert accepted == ["ServiceLatencyIncreased"]
        decided = [entry.input_type for entry in entries if entry.stage == "decide"]
        assert decided[-1] == "RecoveryProposed"  # RecoveryCompleted ends the run: sent to no stage


def test_a_failed_batch_is_redelivered_whole_and_counted_once(
    rabbitmq: RabbitMqServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The function did its work but its invocation failed (as a timeout would): the broker delivers the
    whole batch again, flagged redelivered, and validate's dedup makes it harmless."""
    queue = rabbitmq_ingress.new_queue()
    parameters = rabbitmq_ingress.stack_parameters(queue)
    with LocalCloud(mode="inprocess", logs_dir=tmp_path / "logs", parameters=parameters) as cloud:
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        first, second = seed.latency_event(event_id="evt-a"), seed.latency_event(event_id="evt-b")
        send(rabbitmq.url, queue, first, "m-a")
        send(rabbitmq.url, queue, second, "m-b")
        real = cloud.invoke
        calls: list[Invocation] = []

        def failing_once(function: str, event: Any) -> Invocation:
            invocation = real(function, event)
            calls.append(invocation)
            if len(calls) == 1:
                return dataclasses.replace(invocation, error=TimeoutError("the invocation timed out"))
            return invocation

        monkeypatch.setattr(cloud, "invoke", failing_once)
        with rabbitmq_ingress.mapping(cloud, rabbitmq.url) as mapping:
            failed, redelivered = mapping.drain()

        assert not failed.acknowledged
        assert redelivered.acknowledged
        assert failed.message_ids == redelivered.message_ids == ("m-a", "m-b")
        assert failed.redelivered == (False, False)
        assert redelivered.redelivered == (True, True)
        assert depth(rabbitmq.url, queue) == 0
        monkeypatch.undo()
        assert cloud.run_until_idle(max_invocations=200).idle
        store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        runs = store.runs(str(first["tenant_id"]))
        assert len(runs) == 2  # one run per event, not per delivery
        for run in runs:
            entries = store.entries(run.tenant_id, run.run_id)
            accepted = [e.input_type for e in entries if e.stage == "validate"]
            assert accepted.count("ServiceLatencyIncreased") == 1


def test_the_same_file_ends_in_the_same_buckets_on_the_bus_and_through_rabbitmq(
    rabbitmq: RabbitMqServer, tmp_path: Path
) -> None:
    """Poison among good: unknown fields, a missing tenant, a bad payload, a pipeline source, a source no
    binding names; the sample's duplicate and its other tenant."""
    events = tmp_path / "events.jsonl"
    extra = [
        seed.latency_event(event_id="evt-pipeline") | {"source": "intentbus.pipeline"},
        seed.latency_event(event_id="evt-unbound") | {"source": "elsewhere.example"},
        seed.latency_event(event_id="evt-good-2"),
    ]
    events.write_text(SAMPLE.read_text() + "".join(json.dumps(e) + "\n" for e in extra))
    project = resolve(REPO / "template.yaml", None)
    reports = {}
    for ingress in ("bus", "rabbitmq"):
        report = tmp_path / f"{ingress}.json"
        local.run_events(
            project,
            events,
            report=report,
            mode="inprocess",
            environment="dev",
            ingress=ingress,
            rabbitmq_url=rabbitmq.url,
        )
        reports[ingress] = json.loads(report.read_text())
    buckets = {
        ingress: [(item["line"], item["bucket"]) for item in report["inputs"]]
        for ingress, report in reports.items()
    }
    assert buckets["rabbitmq"] == buckets["bus"]
    assert {bucket for _, bucket in buckets["bus"]} >= {"applied", "duplicate", "quarantined"}
    assert "lost" not in {bucket for _, bucket in buckets["bus"]}


def test_binary_mode_cloudevents_through_rabbitmq_and_a_forged_tenant_header(
    rabbitmq: RabbitMqServer, tmp_path: Path
) -> None:
    """AMQP binding: attributes as ``cloudEvents_`` headers, the data as the body. The attack: a producer
    that may write the queue claims a tenant its binding does not name, in a header."""
    queue = rabbitmq_ingress.new_queue()
    parameters = rabbitmq_ingress.stack_parameters(queue)
    parameters["BrokerBindings"] = f"rabbitmq:{queue}=org_enterprise_alpha from monitoring.example"
    event = seed.latency_event()
    with LocalCloud(mode="inprocess", logs_dir=tmp_path / "logs", parameters=parameters) as cloud:
        connection = pika.BlockingConnection(pika.URLParameters(rabbitmq.url))
        channel = connection.channel()
        channel.queue_declare(queue=queue, durable=True)
        for message_id, tenant in (("m-good", "org_enterprise_alpha"), ("m-forged", "org_other")):
            headers = {
                "cloudEvents_specversion": "1.0",
                "cloudEvents_id": f"ce-{message_id}",
                "cloudEvents_source": "monitoring.example",
                "cloudEvents_type": "ServiceLatencyIncreased",
                "cloudEvents_tenantid": tenant,
            }
            channel.basic_publish(
                exchange="",
                routing_key=queue,
                body=json.dumps(event["payload"]).encode(),
                properties=pika.BasicProperties(
                    content_type="application/json", message_id=message_id, headers=headers
                ),
            )
        connection.close()

        batches = rabbitmq_ingress.deliver(cloud, rabbitmq.url)
        assert [batch.message_ids for batch in batches] == [("m-good", "m-forged")]
        assert all(batch.acknowledged for batch in batches)  # the forged one is quarantined, not retried
        (quarantined,) = [json.loads(m.body) for m in cloud.queue_messages("QuarantineQueue")]
        assert quarantined["source_message_id"] == "m-forged"
        assert quarantined["reason"] == (
            f"rabbitmq:{queue}::/ is not bound to tenant 'org_other' (BrokerBindings)"
        )
        kept = json.loads(quarantined["body"])
        assert kept["broker_record"]["basicProperties"]["headers"]["cloudEvents_tenantid"] == {
            "bytes": list(b"org_other")
        }
        cloud.run_until_idle(max_invocations=100)
        store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        assert len(store.runs("org_enterprise_alpha")) == 1
        assert store.runs("org_other") == []


def test_what_keeps_failing_goes_to_the_brokers_dead_letter_exchange(
    rabbitmq: RabbitMqServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Amazon MQ mappings have no on-failure destination: a quorum queue's delivery limit and its
    dead-letter exchange are where the broker parks a batch whose invocation keeps failing."""
    queue = rabbitmq_ingress.new_queue()
    parameters = rabbitmq_ingress.stack_parameters(queue)
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq.url))
    channel = connection.channel()
    channel.queue_declare(queue=f"{queue}-dead", durable=True)
    channel.queue_declare(
        queue=queue,
        durable=True,
        arguments={
            "x-queue-type": "quorum",
            "x-delivery-limit": 2,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": f"{queue}-dead",
        },
    )
    connection.close()
    with LocalCloud(mode="inprocess", logs_dir=tmp_path / "logs", parameters=parameters) as cloud:
        send(rabbitmq.url, queue, seed.latency_event(), "m-stuck", declare=False)

        def always_failing(function: str, event: Any) -> Invocation:
            return dataclasses.replace(cloud.runtime.invoke(function, event), error=ConnectionError("down"))

        monkeypatch.setattr(cloud, "invoke", always_failing)
        batches = rabbitmq_ingress.deliver(cloud, rabbitmq.url, max_invocations=10)

    assert [batch.acknowledged for batch in batches] == [False, False, False]  # the first and 2 more
    assert depth(rabbitmq.url, queue) == 0
    assert depth(rabbitmq.url, f"{queue}-dead") == 1
