"""The facts authorize publishes: a command authorized (execute reads it), denied (record reads it), or
waiting for a person's approval."""

from datetime import datetime

from intentbus.envelope import Envelope
from intentbus.policy import Verdict
from intentbus.registry import Payload


class CommandAuthorized(Payload):
    command: Envelope
    verdict: Verdict
    resource_version: int | None = None
    """The version of the resource the command changes (its workflow names it) when the command was
    authorized: execute runs it only at that version."""


class CommandDenied(Payload):
    command: Envelope
    verdict: Verdict


class HumanApprovalRequired(Payload):
    command: Envelope
    verdict: Verdict
    approval_id: str
    expires_at: datetime
