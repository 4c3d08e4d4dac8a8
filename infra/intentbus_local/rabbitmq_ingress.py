"""Producer inputs through a real RabbitMQ into the local cloud: the Amazon MQ path of ``local run``.

``stack_parameters`` configures the template's RabbitMQ ingress (a broker ARN and secret that name
nothing real: the mapping is played here) with a queue bound, like the bus's sample producers
(``seed.LOCAL_PRODUCER_BINDINGS``), to their sources and any tenant. ``publish`` sends each input as
one persistent message, its ``message_id`` the id the report matches quarantined inputs by; a body that
names no source gets the CLI's, as ``local run`` puts it on the bus. ``deliver`` plays the mapping
until the queue is empty, after which the local cloud runs the pipeline as for bus input.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from intentbus.errors import ConfigurationError
from intentbus_local.rabbitmq_mapping import MqBatch, RabbitMqMapping, mq_mappings
from intentbus_local.rabbitmq_server import RabbitMqUnavailable
from intentbus_local.seed import LOCAL_PRODUCER_BINDINGS

if TYPE_CHECKING:
    from intentbus_local.cloud import LocalCloud

LOCAL_QUEUE = "intentbus-local-intents"
CLI_SOURCE = "intentbus.cli"
FUNCTION = "RabbitMqIngressFunction"


def local_bindings(queue: str = LOCAL_QUEUE) -> str:
    sources = [entry.partition("=")[0].strip() for entry in LOCAL_PRODUCER_BINDINGS.split(";") if entry]
    return f"rabbitmq:{queue}=* from {'|'.join(sources)}"


def stack_parameters(
    queue: str = LOCAL_QUEUE, *, region: str = "us-east-1", declared: Collection[str] | None = None
) -> dict[str, str]:
    """``declared``: the template's parameters, to say in one line when it has no Amazon MQ ingress."""
    if declared is not None and "MqBrokerArn" not in declared:
        raise ConfigurationError(
            "the template declares no Amazon MQ ingress (the MqBrokerArn parameter and its mapping): "
            "--ingress rabbitmq needs one, as this project's template.yaml has"
        )
    return {
        "MqBrokerArn": f"arn:aws:mq:{region}:000000000000:broker:local:b-local",
        "MqQueue": queue,
        "MqCredentialsSecretArn": f"arn:aws:secretsmanager:{region}:000000000000:secret:local-rabbitmq",
        "BrokerBindings": local_bindings(queue),
    }


Sent = list[tuple[int, dict[str, Any], str, str]]
"""(line, body sent, message id, source), as ``report.build`` reads it."""


def publish(url: str, queue: str, lines: Sequence[tuple[int, dict[str, Any]]]) -> Sent:

    sent: Sent = []
    connection = connect(url)
    try:
        channel = connection.channel()
        channel.queue_declare(queue=queue, durable=True)
        channel.confirm_delivery()
        for number, envelope in lines:
            body = {"source": CLI_SOURCE, **envelope}
            message_id = str(uuid.uuid4())
            publish_json(channel, queue, body, message_id)
            sent.append((number, body, message_id, str(body["source"])))
    finally:
        connection.close()
    return sent


def publish_json(channel: Any, queue: str, body: dict[str, Any], message_id: str) -> None:
    """One persistent JSON message on the default exchange, as a producer would send it."""
    import pika

    channel.basic_publish(
        exchange="",
        routing_key=queue,
        body=json.dumps(body).encode(),
        properties=pika.BasicProperties(
            content_type="application/json", delivery_mode=2, message_id=message_id
        ),
    )


def connect(url: str) -> Any:
    """A connection to ``url``, or one line saying where it could not connect (never the password)."""
    import pika
    import pika.exceptions

    parameters = pika.URLParameters(url)
    try:
        return pika.BlockingConnection(parameters)
    except pika.exceptions.AMQPError as error:
        told = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        raise RabbitMqUnavailable(
            f"cannot reach RabbitMQ at {parameters.host}:{parameters.port}: {told}"
        ) from None


@contextmanager
def mapping(cloud: LocalCloud, url: str) -> Iterator[RabbitMqMapping]:
    (spec,) = [spec for spec in mq_mappings(cloud) if spec.function_logical_id == FUNCTION]
    player = RabbitMqMapping(cloud, spec, url)
    try:
        yield player
    finally:
        player.close()


def deliver(cloud: LocalCloud, url: str, *, max_invocations: int = 1000) -> list[MqBatch]:
    with mapping(cloud, url) as player:
        return player.drain(max_invocations=max_invocations)


def new_queue() -> str:
    """A queue of this run's own, so that a shared broker's other messages stay out of its report."""
    return f"{LOCAL_QUEUE}-{uuid.uuid4().hex[:8]}"


@contextmanager
def broker(url: str | None) -> Iterator[str]:
    """``url``, or a RabbitMQ started for the run on free ports (stopped after)."""
    if url is not None:
        yield url
        return
    from intentbus_local.rabbitmq_server import RabbitMqServer

    with RabbitMqServer() as server:
        yield server.url


def emit(cloud: LocalCloud, url: str, queue: str, lines: Sequence[tuple[int, dict[str, Any]]]) -> Sent:
    """Publishes the inputs to ``queue``, plays the mapping until the queue is empty, then deletes it."""
    sent = publish(url, queue, lines)
    deliver(cloud, url, max_invocations=len(lines) + 100)
    import pika.exceptions

    connection = connect(url)
    try:  # the run's own queue, drained: a shared broker is left as it was (one not drained is kept)
        connection.channel().queue_delete(queue=queue, if_empty=True)
    except pika.exceptions.AMQPError:
        pass
    finally:
        if connection.is_open:
            connection.close()
    return sent
