"""The sweep that fires once more after a schedule settled: made whenever a sweep has something to
look at, passed over (its rule moved on as if it had fired) when it would find nothing.

The case it exists for, a crash that left an expiry recorded but unannounced, is
test_regressions.test_an_expiry_sweep_that_dies_after_its_write_still_ends_the_run: its run ends
DENIED only because the final sweep announces what the crashed one recorded.
"""

from __future__ import annotations

import json

from intentbus_faults.harness import EXPIRE_APPROVALS, SWEEP_DEAD_LETTERS, FaultHarness
from intentbus_faults.schedule import direct_input, schedule_of

DEAD_LETTERED = json.dumps(
    {"id": "evt-stray", "detail": {"tenant_id": "t-stray", "run_id": "run-stray", "type": "Stray"}}
)


def _both_sweeps_due_after_the_schedule(harness: FaultHarness) -> None:
    """Both rules next fire two virtual minutes from now: a schedule without faults settles before
    then (its virtual clock only follows the wall clock), so the final sweep is the one that meets
    them, both at once."""
    at = harness.cloud.clock.now() + 120.0
    for entry in harness.cloud.schedules.entries:
        entry.next_at = at


def test_a_schedule_that_leaves_nothing_to_sweep_ends_without_a_sweep_invocation(
    harness: FaultHarness,
) -> None:
    _both_sweeps_due_after_the_schedule(harness)

    result = harness.run(schedule_of(9301, direct_input(9301)))

    assert result.violations == []
    assert result.statuses == {"direct_tool_call t9301-dir0/run-9301-dir0": "COMPLETED"}
    assert result.summary.invocations[EXPIRE_APPROVALS] == 0
    assert result.summary.invocations[SWEEP_DEAD_LETTERS] == 0
    # the rules moved on as if they had fired: the next schedule's sweeps come a period later
    next_at = harness.cloud.schedules.next_at()
    assert next_at is not None
    assert next_at > harness.cloud.clock.now()


def test_a_message_in_a_dead_letter_queue_gets_the_final_sweep(harness: FaultHarness) -> None:
    """A dead-lettered message is what the dead-letter sweep looks at: both due sweeps run."""
    _both_sweeps_due_after_the_schedule(harness)
    cloud = harness.cloud
    cloud.clients.sqs().send_message(
        QueueUrl=cloud.topology.queues["DecideDLQ"].url, MessageBody=DEAD_LETTERED
    )

    result = harness.run(schedule_of(9302, direct_input(9302)))

    assert result.statuses == {"direct_tool_call t9302-dir0/run-9302-dir0": "COMPLETED"}
    assert result.summary.invocations[SWEEP_DEAD_LETTERS] == 1
    assert result.summary.invocations[EXPIRE_APPROVALS] == 1
