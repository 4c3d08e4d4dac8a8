"""The AWS clients a test hands the tools (``ToolContext.clients``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class MissingClient(AssertionError):
    """A tool asked for a client the test did not give: a failing test, not a tool error."""


@dataclass(frozen=True)
class ClientMap:
    """Service name -> client, e.g. ``{"ecs": boto3.client("ecs")}`` inside ``moto.mock_aws()``, or a fake."""

    clients: Mapping[str, Any] = field(default_factory=dict)

    def client(self, service_name: str) -> Any:
        try:
            return self.clients[service_name]
        except KeyError:
            given = ", ".join(sorted(self.clients)) or "none"
            raise MissingClient(
                f"a tool asked for a {service_name!r} client; the test gave {given}: pass "
                f"clients={{{service_name!r}: ...}} to InMemoryPipeline"
            ) from None


class NoClients(ClientMap):
    """No AWS client at all: a tool that asks for one fails the test with the service's name."""
