"""The fault harness with Redis (a real ``redis-server``) as execute's idempotency store: the same
invariants hold as on DynamoDB, and a lease that lapses mid-effect is detected and reconciled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from intentbus_faults import fanout_workflow
from intentbus_faults.harness import FaultHarness
from intentbus_faults.schedule import fanout_input, generate, schedule_of
from intentbus_local.faults import CRASH_AFTER


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultHarness]:
    logs = Path(tmp_path_factory.mktemp("fault-logs"))
    with FaultHarness(logs_dir=logs, idempotency="redis") as running:
        yield running


def test_a_crash_after_the_effect_lapses_the_lease_and_the_retry_reconciles(harness: FaultHarness) -> None:
    """Attack: execute dies right after sku-a's reservation took effect, holding the Redis lease. The
    redelivery after the lease lapsed is told so, asks the journal, and never reserves twice."""
    schedule = schedule_of(
        9301,
        fanout_input(9301),
        # the first UpdateItem execute makes is sku-a's journal write: the effect, then the crash
        forced={("ExecuteFunction:dynamodb.UpdateItem", 0): CRASH_AFTER},
    )

    result = harness.run(schedule)

    assert result.violations == []
    assert result.lapses >= 1
    assert result.observation is not None
    journal = fanout_workflow.journal_key("t9301-fan0", "run-9301-fan0", "sku-a")
    assert result.observation.journal[journal] == 1


def test_seeded_schedules_keep_every_invariant_with_records_in_redis(harness: FaultHarness) -> None:
    table = harness.cloud.topology.tables["IdempotencyTable"]
    for seed in (11, 12, 13):
        result = harness.run(generate(seed, drive=harness.drive))

        assert result.violations == [], f"seed {seed}"
        assert result.observation is not None
        statuses = {item.get("status") for item in result.observation.idempotency.values()}
        assert "COMPLETED" in statuses, f"seed {seed}"
        assert statuses <= {"COMPLETED", "INPROGRESS"}, f"seed {seed}"
        assert not [c for c in harness.calls.calls if table in str(c.params)], "DynamoDB was used"
