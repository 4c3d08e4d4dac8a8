"""The ``forge`` fault: each forgery is put among real traffic, and the pipeline refuses it.

One schedule per forgery (schedule.FORGERIES), with an incident, a fan-out order whose partner line
waits for a person (so there is a command waiting for approval to forge facts for) and a direct tool
call in flight; the attacker forges up to three messages from what it reads of them. Each must end
quarantined — a forged pipeline fact with the reason ``not recorded by the pipeline``, counted as
forged — or, where it cannot be told from a legitimate late duplicate, as a duplicate or stale with
no effect; and the schedule must break no invariant, (h) and (i) included.
"""

from __future__ import annotations

import pytest

from intentbus.errors import NOT_RECORDED
from intentbus_faults.harness import FaultHarness
from intentbus_faults.invariants import INGRESS, PIPELINE_BUS
from intentbus_faults.schedule import (
    FORGERIES,
    OUTCOME_UNAUTHORIZED,
    direct_input,
    fanout_input,
    incident_input,
    schedule_of,
)

_REFUSED = ("quarantined by ", "duplicate at ", "stale at ")


@pytest.mark.parametrize("variant", FORGERIES)
def test_a_forgery_among_real_traffic_is_refused_and_changes_nothing(
    harness: FaultHarness, variant: str
) -> None:
    seed = 9600 + FORGERIES.index(variant)
    lines = [
        {"sku": "sku-a", "quantity": 2, "channel": "web"},
        {"sku": "sku-b", "quantity": 3, "channel": "partner"},  # waits for a person, who never comes
    ]
    schedule = schedule_of(
        seed,
        incident_input(seed),
        fanout_input(seed, lines=lines),
        direct_input(seed),
        forge=[variant],
        max_forged=3,
    )

    result = harness.run(schedule)

    assert result.forged, f"{variant}: nothing in flight to forge from"
    assert all(forged.variant == variant for forged, _ in result.forged)
    assert result.violations == [], "\n".join(result.violations)
    ends = {str(forged): end for forged, end in result.forged}
    assert all(end.startswith(_REFUSED) for end in ends.values()), ends
    observation = result.observation
    assert observation is not None
    for forged, end in result.forged:
        if not end.startswith("quarantined by "):
            continue
        reasons = [reason for _, reason in observation.quarantined[forged.bus_event_id]]
        if forged.door == PIPELINE_BUS:
            assert all(reason.startswith(NOT_RECORDED) for reason in reasons), (str(forged), reasons)
            landings = observation.landings[forged.bus_event_id]
            assert all(landing.forged for landing in landings if landing.outcome == "quarantined"), landings
        else:
            assert forged.door == INGRESS
            assert end == "quarantined by validate", (str(forged), end, reasons)
    statuses = result.statuses
    assert statuses[f"incident_response t{seed}-inc0/run-{seed}-inc0"] == "COMPLETED"
    assert statuses[f"direct_tool_call t{seed}-dir0/run-{seed}-dir0"] == "COMPLETED"
    assert statuses[f"fanout_reservation t{seed}-fan0/run-{seed}-fan0"] == "AWAITING_APPROVAL"


def test_a_forged_outcome_for_a_command_waiting_for_approval_leaves_it_waiting(harness: FaultHarness) -> None:
    """The issue's case: a forged CommandFailed (or CommandExecuted) for a command waiting for a
    person must not end the run; the approval stays pending, the run waiting."""
    lines = [
        {"sku": "sku-a", "quantity": 2, "channel": "partner"},
        {"sku": "sku-b", "quantity": 3, "channel": "partner"},
    ]
    schedule = schedule_of(9620, fanout_input(9620, lines=lines), forge=[OUTCOME_UNAUTHORIZED], max_forged=2)

    result = harness.run(schedule)

    assert [end for _, end in result.forged] == ["quarantined by record"] * 2
    assert any("waiting for approval" in forged.target for forged, _ in result.forged), result.forged
    assert result.violations == [], "\n".join(result.violations)
    assert result.statuses == {"fanout_reservation t9620-fan0/run-9620-fan0": "AWAITING_APPROVAL"}
    assert result.observation is not None
    (run,) = result.observation.runs
    assert len(run.pending_approvals) == 2
