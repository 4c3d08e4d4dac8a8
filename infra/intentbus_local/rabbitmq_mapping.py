"""Plays Lambda's Amazon MQ for RabbitMQ event-source mapping against a real RabbitMQ.

The mapping is the template's own ``AWS::Lambda::EventSourceMapping`` with ``Queues`` (moto creates no
broker mapping; provision.py leaves it out), its properties resolved with the stack's parameters. Like
Lambda's poller it takes up to ``BatchSize`` messages from the queue unacknowledged, invokes the function
once with the ``aws:rmq`` event in the shape AWS documents (``rmqMessagesByQueue`` keyed ``queue::vhost``,
``basicProperties``, ``redelivered``, base64 ``data``), and acknowledges the batch only after the function
succeeded. A failed invocation returns the whole batch to the queue (``basic_nack`` with ``requeue``),
delivered again with ``redelivered`` true: Amazon MQ mappings have no partial batch response. One batch
at a time, as Lambda runs one per mapping; the batching window is not waited out.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from intentbus_local.lambda_runtime import Invocation

if TYPE_CHECKING:
    from intentbus_local.cloud import LocalCloud

_MAPPING = "AWS::Lambda::EventSourceMapping"


@dataclass(frozen=True)
class MqMappingSpec:
    logical_id: str
    function_logical_id: str
    broker_arn: str
    queue: str
    vhost: str
    batch_size: int

    @property
    def key(self) -> str:
        return f"{self.queue}::{self.vhost}"


@dataclass(frozen=True)
class MqBatch:
    invocation: Invocation
    message_ids: tuple[str | None, ...]
    redelivered: tuple[bool, ...]

    @property
    def acknowledged(self) -> bool:
        return not self.invocation.failed


def mq_mappings(cloud: LocalCloud) -> list[MqMappingSpec]:
    """The deployed stack's Amazon MQ mappings, their ``Ref``s to parameters resolved."""
    stack = cloud.clients.cloudformation().describe_stacks(StackName=cloud.topology.stack_name)["Stacks"][0]
    declared = cloud.template.cloudformation.get("Parameters", {})
    values = {name: str(spec.get("Default", "")) for name, spec in declared.items()}
    values |= {p["ParameterKey"]: str(p.get("ParameterValue", "")) for p in stack.get("Parameters", [])}

    def resolved(value: Any) -> Any:
        if isinstance(value, Mapping) and set(value) == {"Ref"}:
            return values.get(str(value["Ref"]), value["Ref"])
        return value

    found: list[MqMappingSpec] = []
    for logical_id, resource in cloud.template.cloudformation["Resources"].items():
        properties = resource.get("Properties", {})
        if resource["Type"] != _MAPPING or "Queues" not in properties:
            continue
        function = resolved(properties["FunctionName"])
        if function not in cloud.topology.functions:  # its Condition is false: not deployed
            continue
        access = {
            str(a["Type"]): resolved(a["URI"]) for a in properties.get("SourceAccessConfigurations", [])
        }
        found.append(
            MqMappingSpec(
                logical_id=logical_id,
                function_logical_id=function,
                broker_arn=str(resolved(properties["EventSourceArn"])),
                queue=str(resolved(properties["Queues"][0])),
                vhost=str(access.get("VIRTUAL_HOST", "/")),
                batch_size=int(resolved(properties.get("BatchSize", 100))),
            )
        )
    return found


class RabbitMqMapping:
    """One mapping's poller; ``url`` is the broker (``amqp://user:password@host:port/``), the mapping's
    virtual host used whatever the URL says."""

    def __init__(self, cloud: LocalCloud, spec: MqMappingSpec, url: str) -> None:
        import pika

        self.cloud = cloud
        self.spec = spec
        parameters = pika.URLParameters(url)
        parameters.virtual_host = spec.vhost
        self._connection = pika.BlockingConnection(parameters)
        self._channel = self._connection.channel()
        self._channel.queue_declare(queue=spec.queue, passive=True)  # the broker's queue, as declared there
        self.batches: list[MqBatch] = []

    def close(self) -> None:
        if self._connection.is_open:
            self._connection.close()

    def poll(self) -> MqBatch | None:
        """One batch through the function; ``None`` when the queue had nothing."""
        taken: list[tuple[Any, Any, bytes]] = []
        while len(taken) < self.spec.batch_size:
            method, properties, body = self._channel.basic_get(queue=self.spec.queue, auto_ack=False)
            if method is None:
                break
            taken.append((method, properties, body))
        if not taken:
            return None
        event = {
            "eventSource": "aws:rmq",
            "eventSourceArn": self.spec.broker_arn,
            "rmqMessagesByQueue": {
                self.spec.key: [
                    {
                        "basicProperties": basic_properties(properties, body),
                        "redelivered": bool(method.redelivered),
                        "data": base64.b64encode(body).decode(),
                    }
                    for method, properties, body in taken
                ]
            },
        }
        invocation = self.cloud.invoke(self.spec.function_logical_id, event)
        last = taken[-1][0].delivery_tag
        if invocation.failed:
            self._channel.basic_nack(delivery_tag=last, multiple=True, requeue=True)
        else:
            self._channel.basic_ack(delivery_tag=last, multiple=True)
        batch = MqBatch(
            invocation=invocation,
            message_ids=tuple(properties.message_id for _, properties, _ in taken),
            redelivered=tuple(bool(method.redelivered) for method, _, _ in taken),
        )
        self.batches.append(batch)
        return batch

    def drain(self, *, max_invocations: int = 1000) -> list[MqBatch]:
        """Polls until the queue is empty (or ``max_invocations``: a batch that always fails comes back)."""
        done: list[MqBatch] = []
        while len(done) < max_invocations:
            batch = self.poll()
            if batch is None:
                break
            done.append(batch)
        return done


def basic_properties(properties: Any, body: bytes) -> dict[str, Any]:
    """pika's ``BasicProperties`` as Lambda's event has them: header text as ``{"bytes": [...]}``."""
    stamp = properties.timestamp
    return {
        "contentType": properties.content_type,
        "contentEncoding": properties.content_encoding,
        "headers": {name: _header(value) for name, value in (properties.headers or {}).items()},
        "deliveryMode": properties.delivery_mode,
        "priority": properties.priority,
        "correlationId": properties.correlation_id,
        "replyTo": properties.reply_to,
        "expiration": properties.expiration,
        "messageId": properties.message_id,
        "timestamp": None if stamp is None else _timestamp(int(stamp)),
        "type": properties.type,
        "userId": properties.user_id,
        "appId": properties.app_id,
        "clusterId": properties.cluster_id,
        "bodySize": len(body),
    }


def _header(value: Any) -> Any:
    if isinstance(value, str):
        return {"bytes": list(value.encode())}
    if isinstance(value, bytes):
        return {"bytes": list(value)}
    return value


def _timestamp(epoch_seconds: int) -> str:
    """As the documented event writes it: ``Jan 1, 1970, 12:33:41 AM``."""
    moment = datetime.fromtimestamp(epoch_seconds, UTC)
    return f"{moment:%b} {moment.day}, {moment:%Y}, {moment:%I:%M:%S %p}".replace(", 0", ", ", 1)
