"""Where the template's rules send what a stage publishes."""

from __future__ import annotations

from intentbus import facts
from intentbus.envelope import Envelope
from intentbus.extensions import RUN_ENDED

ROUTES = {
    facts.EVENT_ACCEPTED: "decide",
    facts.COMMAND_PROPOSED: "authorize",
    facts.COMMAND_AUTHORIZED: "execute",
    facts.COMMAND_EXECUTED: "record",
    facts.COMMAND_FAILED: "record",
    facts.COMMAND_DENIED: "record",
    facts.COMMAND_OUTCOME_UNKNOWN: "record",
    facts.COMMAND_CONFLICTED: "record",
    facts.COMMAND_SKIPPED: "record",
}


def route(envelope: Envelope) -> str | None:
    """The stage whose queue a published envelope lands in; ``None`` when no stage consumes it.

    A workflow's outcome event (record's, source ``intentbus.workflow``) goes straight to decide, unless it
    is marked as its run's last (``RUN_ENDED``: no step follows it); any other source is a producer's,
    which enters through validate."""
    if envelope.source == facts.WORKFLOW_SOURCE:
        return None if RUN_ENDED in envelope.extensions else "decide"
    if envelope.source != facts.PIPELINE_SOURCE:
        return "validate"
    return ROUTES.get(envelope.type)
