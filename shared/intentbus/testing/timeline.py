"""A run's log as a test reads it: what each stage did with which input, in order."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from intentbus.journal import LogEntry


@dataclass(frozen=True)
class TimelineEntry:
    """What one stage did with one input of a run, as its log entry records it."""

    stage: str
    input_type: str
    outcome: str
    at: datetime
    summary: dict[str, Any] = field(default_factory=dict, compare=False)
    published: tuple[str, ...] = ()
    """The types of what the stage published for this input."""

    @property
    def step(self) -> tuple[str, str, str]:
        """``(stage, input_type, outcome)``: what to compare a whole timeline against."""
        return (self.stage, self.input_type, self.outcome)


def timeline(entries: Iterable[LogEntry]) -> list[TimelineEntry]:
    ordered = sorted(entries, key=lambda entry: (entry.at, entry.version))
    return [
        TimelineEntry(
            stage=entry.stage,
            input_type=entry.input_type,
            outcome=entry.outcome.value,
            at=entry.at,
            summary=dict(entry.summary),
            published=tuple(output.type for output in entry.outputs),
        )
        for entry in ordered
    ]
