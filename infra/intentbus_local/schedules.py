"""Scheduled rules, fired on the local cloud's virtual clock: a 4-hour wait takes no real time."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from intentbus_local.api_events import scheduled_event
from intentbus_local.template import LocalTemplate

_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


def period_seconds(expression: str) -> int:
    """Seconds between firings of a ``rate(...)`` expression; ``cron(...)`` is not played locally."""
    match = _RATE.match(expression.strip())
    if match is None:
        raise ValueError(f"the local cloud plays rate() schedules only, not {expression!r}")
    return int(match.group(1)) * _SECONDS[match.group(2).rstrip("s")]


@dataclass
class Schedule:
    function: str
    rule: str
    period: int
    next_at: float


@dataclass
class Schedules:
    """Every ``Schedule`` event in the template, with its next firing time in virtual time."""

    invoke: Callable[[str, Mapping[str, Any]], Any]
    region: str
    account_id: str
    entries: list[Schedule] = field(default_factory=list)

    @classmethod
    def from_template(
        cls,
        template: LocalTemplate,
        invoke: Callable[[str, Mapping[str, Any]], Any],
        *,
        now: float,
        region: str,
        account_id: str,
    ) -> Schedules:
        schedules = cls(invoke=invoke, region=region, account_id=account_id)
        for logical_id, resource in template.sam["Resources"].items():
            if resource.get("Type") != "AWS::Serverless::Function":
                continue
            for name, event in resource.get("Properties", {}).get("Events", {}).items():
                if event.get("Type") == "Schedule":
                    period = period_seconds(event["Properties"]["Schedule"])
                    schedules.entries.append(
                        Schedule(logical_id, f"{logical_id}{name}", period, now + period)
                    )
        return schedules

    def keep_times_of(self, earlier: Schedules) -> None:
        """After a redeploy: a rule that was already scheduled keeps its next firing time."""
        times = {(entry.function, entry.rule): entry.next_at for entry in earlier.entries}
        for entry in self.entries:
            entry.next_at = times.get((entry.function, entry.rule), entry.next_at)

    def next_at(self) -> float | None:
        return min((entry.next_at for entry in self.entries), default=None)

    def due(self, now: float) -> list[str]:
        """The logical ids of the functions ``fire_due(now)`` would invoke, in its order."""
        return [entry.function for entry in self._due(now)]

    def fire_due(self, now: float) -> list[str]:
        """Fires each schedule whose time came, once (as EventBridge does after a pause); returns the
        logical ids of the functions it invoked."""
        fired: list[str] = []
        for entry in self._due(now):
            arn = f"arn:aws:events:{self.region}:{self.account_id}:rule/{entry.rule}"
            self.invoke(
                entry.function, scheduled_event(arn, now=now, region=self.region, account_id=self.account_id)
            )
            _move_on(entry, now)
            fired.append(entry.function)
        return fired

    def pass_due(self, now: float) -> list[str]:
        """Moves each schedule whose time came on as ``fire_due`` does, without invoking its function:
        for a caller that knows the invocation would find nothing to do. Returns the functions passed."""
        passed: list[str] = []
        for entry in self._due(now):
            _move_on(entry, now)
            passed.append(entry.function)
        return passed

    def _due(self, now: float) -> list[Schedule]:
        """The schedules whose time came, listed before any is moved on."""
        return [entry for entry in self.entries if entry.next_at <= now]


def _move_on(entry: Schedule, now: float) -> None:
    """The rule's next time after ``now``: it fires once for all the times it missed."""
    missed = int((now - entry.next_at) // entry.period) + 1
    entry.next_at += missed * entry.period
