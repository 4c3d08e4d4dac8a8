"""The local cloud's scheduled rules: a rule passed over moves on exactly as one that fired."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from intentbus_local.schedules import Schedule, Schedules


def _schedules(invoked: list[str], *, now: float) -> Schedules:
    def invoke(function: str, event: Mapping[str, Any]) -> None:
        invoked.append(function)

    return Schedules(
        invoke=invoke,
        region="us-east-1",
        account_id="123456789012",
        entries=[
            Schedule("SweepFunction", "SweepFunctionEvery", 60, now + 60),
            Schedule("ReportFunction", "ReportFunctionEvery", 300, now + 300),
        ],
    )


def test_due_lists_the_rules_whose_time_came_without_invoking_them() -> None:
    invoked: list[str] = []
    schedules = _schedules(invoked, now=0.0)

    assert schedules.due(59.0) == []
    assert schedules.due(60.0) == ["SweepFunction"]
    assert schedules.due(300.0) == ["SweepFunction", "ReportFunction"]
    assert invoked == []


def test_a_passed_rule_moves_on_as_a_fired_one_does_and_nothing_is_invoked() -> None:
    fired_log: list[str] = []
    passed_log: list[str] = []
    fired, passed = _schedules(fired_log, now=0.0), _schedules(passed_log, now=0.0)

    # 130 s after a 60 s rule's first time: fired once (as EventBridge after a pause), next at 180
    assert fired.fire_due(190.0) == ["SweepFunction"]
    assert passed.pass_due(190.0) == ["SweepFunction"]

    assert [e.next_at for e in passed.entries] == [e.next_at for e in fired.entries] == [240.0, 300.0]
    assert fired_log == ["SweepFunction"]
    assert passed_log == []
    assert passed.pass_due(190.0) == []
