"""The facts execute publishes, which record reads: what became of an authorized command."""

from typing import Any

from intentbus.envelope import Envelope
from intentbus.registry import Payload


class CommandExecuted(Payload):
    command: Envelope
    result: dict[str, Any]
    reconciled: bool = False
    """True when the result was found by the tool's reconcile check after an attempt that lapsed."""


class CommandFailed(Payload):
    command: Envelope
    error: str


class CommandConflicted(Payload):
    """Another command changed the resource since this one was authorized: it was never run."""

    command: Envelope
    resource: str
    authorized_at_version: int
    holder: str | None
    """The command that holds the resource's current version."""
    reason: str


class CommandSkipped(Payload):
    """The run had already ended when the command reached execute: it was never run."""

    command: Envelope
    reason: str


class CommandOutcomeUnknown(Payload):
    """An earlier attempt may have half-happened and the tool cannot tell: a person decides."""

    command: Envelope
    reason: str
