"""Which tenants and sources each broker channel may carry: configuration, never the message.

A Kafka record or a RabbitMQ message says nothing trustworthy about who sent it: its headers and body
are the producer's. What the deployment knows is where it was read: the topic, or the queue and its
virtual host, which the broker's own ACLs let only some producers write. So a broker input's tenant
is bound by that channel (``BrokerBindings``, the ``INTENTBUS_BROKER_BINDINGS`` variable)::

    kafka:incidents=acme|globex from monitoring.example; rabbitmq:alerts=acme from pager.example

``kafka:TOPIC`` names a topic; ``rabbitmq:QUEUE`` a queue of the virtual host ``/``, and
``rabbitmq:QUEUE::VHOST`` one of another (as Lambda keys its messages, ``queue::vhost``). After ``=``
the tenants, after ``from`` the sources the channel's inputs may name; ``*`` for either is for tests
and local runs. A body that names no source takes the channel's, when it binds exactly one.
An unbound channel carries nothing: each of its inputs is quarantined with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from intentbus.envelope import TENANT_PATTERN
from intentbus.errors import ConfigurationError

ANY = "*"
DEFAULT_VHOST = "/"
_NAME = re.compile(r"^[^\s=;|]{1,512}$")
_SOURCE = re.compile(r"^[^\s=@;|]{1,256}$")
_TENANT = re.compile(TENANT_PATTERN)


class BrokerKind(Enum):
    KAFKA = "kafka"
    RABBITMQ = "rabbitmq"


@dataclass(frozen=True)
class Channel:
    """Where a broker input was read: a Kafka topic, or a RabbitMQ ``queue::vhost``."""

    kind: BrokerKind
    name: str

    @classmethod
    def rabbitmq(cls, queue: str, vhost: str = DEFAULT_VHOST) -> Channel:
        return cls(BrokerKind.RABBITMQ, f"{queue}::{vhost}")

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.name}"


@dataclass(frozen=True)
class Binding:
    """The tenants and sources one broker channel may carry."""

    tenants: frozenset[str]
    sources: frozenset[str]

    @property
    def only_source(self) -> str | None:
        """The channel's source when it binds exactly one (and not ``*``)."""
        if len(self.sources) == 1 and ANY not in self.sources:
            return next(iter(self.sources))
        return None


@dataclass(frozen=True)
class BrokerBindings:
    """Each Kafka topic's and RabbitMQ queue's binding (``BROKER_BINDINGS``)."""

    bindings: dict[Channel, Binding] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> BrokerBindings:
        bindings: dict[Channel, Binding] = {}
        for number, item in enumerate((part.strip() for part in text.split(";")), start=1):
            if not item:
                continue
            channel_text, equals, rest = (part.strip() for part in item.partition("="))
            tenants_text, sep, sources_text = (part.strip() for part in rest.partition(" from "))
            if not equals or not sep:
                raise ConfigurationError(
                    f"BrokerBindings entry {number} {item!r}: expected KIND:NAME=TENANT|... from SOURCE|..."
                )
            channel = _channel(number, channel_text)
            tenants = frozenset(t.strip() for t in tenants_text.split("|") if t.strip())
            sources = frozenset(s.strip() for s in sources_text.split("|") if s.strip())
            bad_tenants = sorted(t for t in tenants if t != ANY and not _TENANT.match(t))
            if not tenants or bad_tenants:
                raise ConfigurationError(
                    f"BrokerBindings entry {number}: "
                    f"{', '.join(bad_tenants) or 'no tenant'} is not a tenant id"
                )
            bad_sources = sorted(s for s in sources if not _SOURCE.match(s))
            if not sources or bad_sources:
                raise ConfigurationError(
                    f"BrokerBindings entry {number}: {', '.join(bad_sources) or 'no source'} is not a source"
                )
            before = bindings.get(channel, Binding(frozenset(), frozenset()))
            bindings[channel] = Binding(before.tenants | tenants, before.sources | sources)
        return cls(bindings)

    def binding(self, channel: Channel) -> Binding | None:
        return self.bindings.get(channel)

    def refuses(self, channel: Channel, *, source: str, tenant_id: str) -> str | None:
        """Why ``channel`` may not carry an input of ``source`` for ``tenant_id``; ``None`` when it may."""
        binding = self.bindings.get(channel)
        if binding is None:
            return f"{channel} is not bound to any tenant (BrokerBindings): nothing read there is accepted"
        if ANY not in binding.sources and source not in binding.sources:
            return f"{channel} is not bound to source {source!r} (BrokerBindings)"
        if ANY not in binding.tenants and tenant_id not in binding.tenants:
            return f"{channel} is not bound to tenant {tenant_id!r} (BrokerBindings)"
        return None


def _channel(number: int, text: str) -> Channel:
    kind_text, colon, name = text.partition(":")
    kinds = {kind.value: kind for kind in BrokerKind}
    if not colon or kind_text not in kinds or not _NAME.match(name):
        raise ConfigurationError(
            f"BrokerBindings entry {number}: {text!r} is not kafka:TOPIC or rabbitmq:QUEUE[::VHOST]"
        )
    kind = kinds[kind_text]
    if kind is BrokerKind.RABBITMQ:
        queue, _, vhost = name.partition("::")
        return Channel.rabbitmq(queue, vhost or DEFAULT_VHOST)
    return Channel(kind, name)


@dataclass(frozen=True)
class BrokerSender:
    """The validate stage's ``InputSender`` for an input read from ``channel``."""

    bindings: BrokerBindings
    channel: Channel

    def refuses(self, *, source: str, tenant_id: str) -> str | None:
        return self.bindings.refuses(self.channel, source=source, tenant_id=tenant_id)

    def principal(self, source: str) -> str | None:
        return None  # a broker does not say which principal wrote a message
