"""Reads the events Lambda's Kafka and Amazon MQ mappings deliver into one message per record.

Kafka (``eventSource`` ``aws:kafka`` for Amazon MSK, ``SelfManagedKafka`` otherwise): ``records`` keyed
``topic-partition``, each record read by Powertools' ``KafkaRecordModel`` (base64 ``key`` and ``value``,
``headers`` a list of ``{name: [byte, ...]}``). RabbitMQ (``aws:rmq``): ``rmqMessagesByQueue`` keyed
``queue::vhost``, each message ``basicProperties`` (its ``headers``' text values as ``{"bytes": [...]}``),
``redelivered`` and base64 ``data``.

A body is an intentbus envelope or a CloudEvent in structured mode (a JSON object), or a CloudEvent in
binary mode: its attributes in ``ce_`` headers (the CloudEvents Kafka binding) or ``cloudEvents_`` /
``cloudEvents:`` headers (the AMQP binding), its ``content-type`` (``contentType``) the data's, the value
the data. Binary mode is turned into the structured event validate reads (``detail``).

The event as a whole must be one of these shapes (else the mapping is misconfigured: ``NotABrokerEvent``);
each record is read on its own, so one that cannot be read is told by ``BrokerMessage.detail`` raising
``MalformedInput`` and quarantined, never failing its neighbours.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from aws_lambda_powertools.utilities.parser.models.kafka import KafkaRecordModel
from pydantic import ValidationError

from intentbus.broker_bindings import BrokerKind, Channel
from intentbus.cloudevent import is_json
from intentbus.errors import IntentbusError, MalformedInput

KAFKA_SOURCES = ("aws:kafka", "SelfManagedKafka")
RABBITMQ_SOURCE = "aws:rmq"
KAFKA_PREFIX = "ce_"
AMQP_PREFIXES = ("cloudEvents_", "cloudEvents:")
CONTENT_TYPE_HEADER = "content-type"


class NotABrokerEvent(IntentbusError):
    """The invocation is not a Kafka or Amazon MQ event: a mapping or a caller is misconfigured."""

    code: ClassVar[str] = "not_a_broker_event"


@dataclass(frozen=True)
class BrokerMessage:
    """One Kafka or RabbitMQ record as delivered, with the channel it came on."""

    channel: Channel
    message_id: str
    """``topic-partition@offset`` for Kafka; the ``messageId`` property (or a digest) for RabbitMQ."""
    raw: Mapping[str, Any]
    """The record as delivered: what quarantine keeps, so nothing is lost."""
    source_arn: str | None

    @property
    def time(self) -> datetime:
        if self.channel.kind is BrokerKind.KAFKA:
            stamp = self.raw.get("timestamp")
            if isinstance(stamp, int) and not isinstance(stamp, bool) and 0 <= stamp < 2**47:
                return datetime.fromtimestamp(stamp / 1000, UTC)
        return datetime.now(UTC)

    def detail(self) -> dict[str, Any]:
        """The body as validate reads it (an envelope or a structured CloudEvent), or why it cannot be."""
        if self.channel.kind is BrokerKind.KAFKA:
            value, headers = _kafka_parts(self.raw)
            return _detail(value, headers, (KAFKA_PREFIX,), headers.get(CONTENT_TYPE_HEADER))
        value, headers, content_type = _rabbitmq_parts(self.raw)
        return _detail(value, headers, AMQP_PREFIXES, content_type)


def messages(event: Mapping[str, Any]) -> Iterator[BrokerMessage]:
    """Every record of a Kafka or Amazon MQ event, in delivery order."""
    source = event.get("eventSource")
    arn = event.get("eventSourceArn")
    arn = arn if isinstance(arn, str) else None
    if source in KAFKA_SOURCES:
        yield from _kafka(event.get("records"), arn)
    elif source == RABBITMQ_SOURCE:
        yield from _rabbitmq(event.get("rmqMessagesByQueue"), arn)
    else:
        raise NotABrokerEvent(
            f"eventSource {str(source)[:64]!r} is not aws:kafka, SelfManagedKafka or aws:rmq"
        )


def _kafka(records: Any, arn: str | None) -> Iterator[BrokerMessage]:
    if not isinstance(records, dict):
        raise NotABrokerEvent("a Kafka event's records is not an object keyed by topic-partition")
    for key, batch in records.items():
        if not isinstance(batch, list):
            raise NotABrokerEvent(f"the Kafka records of {key!r} are not a list")
        for number, record in enumerate(batch):
            raw = record if isinstance(record, dict) else {"record": record}
            topic = raw.get("topic")
            if not isinstance(topic, str) or not topic:
                topic = str(key).rpartition("-")[0] or str(key)  # the key is TOPIC-PARTITION
            offset = raw.get("offset", f"?{number}")
            yield BrokerMessage(Channel(BrokerKind.KAFKA, topic), f"{key}@{offset}", raw, arn)


def _rabbitmq(by_queue: Any, arn: str | None) -> Iterator[BrokerMessage]:
    if not isinstance(by_queue, dict):
        raise NotABrokerEvent("an Amazon MQ event's rmqMessagesByQueue is not an object keyed queue::vhost")
    for key, batch in by_queue.items():
        if not isinstance(batch, list):
            raise NotABrokerEvent(f"the RabbitMQ messages of {key!r} are not a list")
        queue, _, vhost = str(key).partition("::")
        channel = Channel.rabbitmq(queue, vhost or "/")
        for message in batch:
            raw = message if isinstance(message, dict) else {"message": message}
            yield BrokerMessage(channel, _rabbitmq_id(key, raw), raw, arn)


def _rabbitmq_id(key: str, raw: Mapping[str, Any]) -> str:
    properties = raw.get("basicProperties")
    message_id = properties.get("messageId") if isinstance(properties, dict) else None
    if isinstance(message_id, str) and message_id:
        return message_id[:256]
    content = json.dumps(raw, sort_keys=True, default=str)
    return "rmq-" + hashlib.sha256(f"{key}\n{content}".encode()).hexdigest()[:32]


def _kafka_parts(raw: Mapping[str, Any]) -> tuple[bytes | None, dict[str, str]]:
    """The record's value (``None``: it has none) and its headers as text."""
    record = dict(raw)
    _check_kafka_headers(record.get("headers"))
    record["headers"] = [dict(header) for header in record["headers"]]  # the model decodes in place
    value_text = record.get("value")
    record["value"] = ""  # read below, as bytes: the model insists on UTF-8 text
    try:
        model = KafkaRecordModel.model_validate(record)
    except (ValidationError, ValueError) as error:
        if isinstance(error, ValidationError):
            raise MalformedInput.from_validation(error, KafkaRecordModel, prefix="record.") from None
        raise MalformedInput(f"the Kafka record cannot be read: {error}", field="record") from None
    headers: dict[str, str] = {}
    for header in model.headers:
        for name, value in header.items():
            text = _text(value, f"header {name!r}")
            if name in headers and headers[name] != text:
                raise MalformedInput(f"header {name!r} appears twice with different values", field=name)
            headers[name] = text
    return (None if value_text is None else _base64(value_text, "value")), headers


def _check_kafka_headers(headers: Any) -> None:
    """What Powertools' model would trip over with a TypeError rather than tell."""
    shaped = isinstance(headers, list) and all(
        isinstance(header, dict)
        and all(
            isinstance(value, list) and all(isinstance(b, int) and -128 <= b <= 255 for b in value)
            for value in header.values()
        )
        for header in headers
    )
    if not shaped:
        raise MalformedInput("headers is not a list of {name: [byte, ...]}", field="headers")


def _rabbitmq_parts(raw: Mapping[str, Any]) -> tuple[bytes | None, dict[str, str], str | None]:
    properties = raw.get("basicProperties", {})
    if not isinstance(properties, dict):
        raise MalformedInput("basicProperties is not an object", field="basicProperties")
    raw_headers = properties.get("headers") or {}
    if not isinstance(raw_headers, dict):
        raise MalformedInput("basicProperties.headers is not an object", field="headers")
    headers: dict[str, str] = {}
    for name, value in raw_headers.items():
        if isinstance(value, dict) and isinstance(value.get("bytes"), list):
            try:
                headers[name] = _text(bytes(b & 0xFF for b in value["bytes"]), f"header {name!r}")
            except TypeError:
                raise MalformedInput(f"header {name!r} is not a list of bytes", field=name) from None
        elif isinstance(value, str | int | float | bool):
            headers[name] = str(value).lower() if isinstance(value, bool) else str(value)
    content_type = properties.get("contentType")
    data = raw.get("data")
    return (
        None if data is None else _base64(data, "data"),
        headers,
        content_type if isinstance(content_type, str) else None,
    )


def _base64(value: Any, name: str) -> bytes:
    if not isinstance(value, str):
        raise MalformedInput(f"{name} is not base64 text", field=name)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedInput(f"{name} is not base64 text", field=name) from None


def _text(value: bytes, what: str) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise MalformedInput(f"{what} is not UTF-8 text", field=what) from None


def _detail(
    value: bytes | None, headers: Mapping[str, str], prefixes: tuple[str, ...], content_type: str | None
) -> dict[str, Any]:
    attributes = _binary_attributes(headers, prefixes)
    if attributes:
        return _binary_event(attributes, value, content_type)
    if value is None:
        raise MalformedInput("the message has no body", field="value")
    body = _json(value, "the body")
    if not isinstance(body, dict):
        raise MalformedInput(
            f"the body is a JSON {type(body).__name__}, not an envelope or a CloudEvent", field="value"
        )
    return body


def _binary_attributes(headers: Mapping[str, str], prefixes: tuple[str, ...]) -> dict[str, str]:
    attributes: dict[str, str] = {}
    for name, value in headers.items():
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is None:
            continue
        attribute = name[len(prefix) :]
        if attribute in attributes and attributes[attribute] != value:
            raise MalformedInput(f"the CloudEvents attribute {attribute!r} is sent twice", field=name)
        attributes[attribute] = value
    return attributes


def _binary_event(
    attributes: dict[str, str], value: bytes | None, content_type: str | None
) -> dict[str, Any]:
    """A binary-mode CloudEvent as the structured event it stands for (the JSON event format)."""
    if "data" in attributes or "data_base64" in attributes:
        raise MalformedInput("data travels as the message body, not as an attribute", field="data")
    event: dict[str, Any] = dict(attributes)
    if content_type is not None:
        event["datacontenttype"] = content_type
    if value is None:
        return event
    if content_type is None or is_json(content_type):
        event["data"] = _json(value, "the data")
        return event
    try:
        event["data"] = value.decode()
    except UnicodeDecodeError:
        event["data_base64"] = base64.b64encode(value).decode()
    return event


def _json(value: bytes, what: str) -> Any:
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as error:
        raise MalformedInput(f"{what} is not JSON: {str(error)[:120]}", field="value") from None
