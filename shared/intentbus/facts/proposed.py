"""The fact decide publishes for a proposed command, which authorize reads."""

from typing import Any

from pydantic import Field

from intentbus.envelope import Envelope
from intentbus.registry import Payload


class CommandProposed(Payload):
    command: Envelope
    decision_id: str
    agent: str | None = None
    """``None`` when another system sent the command directly."""
    producer: str | None = None
    """For a command sent directly: the principal ``ProducerBindings`` binds to its source, if any."""
    # The agent's own words, which may echo anything the event held: kept in the run's log and shown to
    # approvers, never written to a log line (sensitive: the type registry redacts them).
    rationale: str = Field(default="", json_schema_extra={"sensitive": True})
    evidence: dict[str, Any] = Field(default_factory=dict, json_schema_extra={"sensitive": True})
    confidence: float | None = None
