"""The fact validate publishes for an accepted input, which decide reads."""

from intentbus.envelope import Envelope
from intentbus.registry import Payload


class EventAccepted(Payload):
    event: Envelope
