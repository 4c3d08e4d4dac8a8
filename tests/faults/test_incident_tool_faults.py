"""Faults land on the incident tools' own calls, GetMetricData and UpdateService, and the run still ends
with the answers a run without them gives."""

from __future__ import annotations

from typing import Any

import pytest

from intentbus_faults.harness import FaultHarness, ScheduleResult
from intentbus_faults.schedule import incident_input, schedule_of
from intentbus_local.faults import SERVER_ERROR, THROTTLE


def outputs(result: ScheduleResult, event_type: str) -> list[Any]:
    assert result.observation is not None
    (run,) = result.observation.runs
    return [
        output.payload
        for entry in run.entries
        if entry.stage == "record"
        for output in entry.outputs
        if output.type == event_type
    ]


@pytest.mark.parametrize(
    ("site", "kind"),
    [
        ("ExecuteFunction:cloudwatch.GetMetricData", THROTTLE),
        ("ExecuteFunction:ecs.UpdateService", SERVER_ERROR),
    ],
    ids=["get_metric_data_throttled", "update_service_failed"],
)
def test_a_failed_tool_call_is_retried_and_the_run_completes(
    harness: FaultHarness, site: str, kind: str
) -> None:
    seed = 9401 if kind == THROTTLE else 9402
    result = harness.run(schedule_of(seed, incident_input(seed), forced={(site, 0): kind}))

    assert [(i.kind, i.site, i.occurrence) for i in result.injected] == [(kind, site, 0)]
    assert result.violations == []
    assert set(result.statuses.values()) == {"COMPLETED"}
    (suspected,) = outputs(result, "DependencyFailureSuspected")
    assert (suspected["dependency"], suspected["checked"]) == (
        "payments-db",
        {"payments-db": 0.32, "inventory-api": 0.01},
    )
    (completed,) = outputs(result, "RecoveryCompleted")
    assert (completed["previous_count"], completed["desired_count"]) == (2, 4)
