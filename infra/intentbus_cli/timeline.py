"""A run's timeline, read from its durable log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from intentbus.journal import LogEntry
from intentbus_cli.tables import plain


@dataclass(frozen=True)
class Row:
    offset_ms: float
    duration_ms: float
    stage: str
    input_type: str
    outcome: str
    input_id: str
    published: str


_EXECUTE_FACTS = ("CommandExecuted", "CommandFailed", "CommandOutcomeUnknown")


@dataclass(frozen=True)
class _Event:
    at: datetime
    stage: str
    input_type: str
    outcome: str
    input_id: str
    published: str


def _events(entries: Sequence[LogEntry]) -> list[_Event]:
    """Log entries in time order; execute's outcome, recorded by record, is shown at the time it happened."""
    events: list[_Event] = []
    for entry in entries:
        published = ", ".join(output.type for output in entry.outputs) or "-"
        if entry.stage == "record" and entry.input_type in _EXECUTE_FACTS and "outcome_at" in entry.summary:
            command = str(entry.summary.get("command_type", "?"))
            events.append(
                _Event(
                    datetime.fromisoformat(str(entry.summary["outcome_at"])),
                    "execute",
                    command,
                    "applied",
                    str(entry.summary.get("command_id", "")),
                    entry.input_type,
                )
            )
            events.append(
                _Event(
                    entry.at, entry.stage, entry.input_type, entry.outcome.value, entry.input_id, published
                )
            )
            continue
        events.append(
            _Event(entry.at, entry.stage, entry.input_type, entry.outcome.value, entry.input_id, published)
        )
    return sorted(events, key=lambda event: event.at)


def rows(entries: Sequence[LogEntry]) -> list[Row]:
    events = _events(entries)
    if not events:
        return []
    start = previous = events[0].at
    found: list[Row] = []
    for event in events:
        found.append(
            Row(
                offset_ms=(event.at - start).total_seconds() * 1000,
                duration_ms=(event.at - previous).total_seconds() * 1000,
                stage=event.stage,
                input_type=event.input_type,
                outcome=event.outcome,
                input_id=event.input_id,
                published=event.published,
            )
        )
        previous = event.at
    return found


def render(entries: Sequence[LogEntry]) -> str:
    headers = ("t+ms", "+ms", "stage", "input", "outcome", "input id", "published")
    return plain(
        headers,
        [
            (
                f"{row.offset_ms:.0f}",
                f"{row.duration_ms:.0f}",
                row.stage,
                row.input_type,
                row.outcome,
                row.input_id[:12],
                row.published,
            )
            for row in rows(entries)
        ],
    )
