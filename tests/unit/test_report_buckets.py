"""Where an accepted input ended, by its run's final status (intentbus_local.report.bucket_of)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from intentbus.journal import LogEntry, Outcome
from intentbus.state import Status, WorkflowState
from intentbus_local.report import bucket_of

AT = datetime(2026, 12, 1, 9, tzinfo=UTC)
ACCEPTED = LogEntry(
    stage="validate", input_id="evt-1", input_type="Signup", outcome=Outcome.APPLIED, at=AT, version=1
)


def ended(status: Status, reason: str | None) -> WorkflowState:
    return WorkflowState(
        tenant_id="acme",
        run_id="run-1",
        workflow="signup",
        definition_version="1",
        status=status,
        version=5,
        step_index=1,
        step_on="Signup",
        started_at=AT,
        updated_at=AT,
        reason=reason,
    )


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (Status.COMPLETED, None, ("applied", None)),
        (Status.FAILED, "the tool failed: quota", ("applied", "the tool failed: quota")),
        (Status.DENIED, "rejected by alice", ("denied", "rejected by alice")),
        (Status.CANCELLED, "cancelled by bob: wrong tenant", ("denied", "cancelled by bob: wrong tenant")),
        (Status.CANCELLED, None, ("denied", "CANCELLED")),
        (Status.PAUSED, "the step budget is spent", ("waiting", "the step budget is spent")),
        (Status.AWAITING_APPROVAL, None, ("waiting", "AWAITING_APPROVAL")),
    ],
)
def test_a_run_s_final_status_names_its_input_s_bucket(
    status: Status, reason: str | None, expected: tuple[str, str | None]
) -> None:
    assert bucket_of([ACCEPTED], ended(status, reason), "evt-1") == expected


def test_an_input_no_validate_entry_accepted_is_lost() -> None:
    assert bucket_of([], None, "evt-1") == ("lost", "accepted by nothing: no validate entry")
