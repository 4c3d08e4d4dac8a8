"""The checker can fail: a pipeline broken on purpose, through a test-only seam, is caught.

Each test breaks one rule and runs one hand-made schedule on the shared harness; the invariant that
guards the rule must name it. The trust checks are broken the same way, with the ``forge`` fault
bringing the forged fact they should have refused. (The seams are monkeypatches: the stage modules
import the functions they use by name, so patching the stage module's attribute changes what its
handler calls.)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import intentbus.stages.authorize
import intentbus.stages.decide
import intentbus.stages.execute
import intentbus.stages.record
import intentbus.stages.validate
from intentbus import state
from intentbus.adapters.eventbridge_bus import EventBridgeBus
from intentbus.approval_record import Approval
from intentbus.envelope import Envelope
from intentbus.journal import Commit, CommitStatus, Outcome
from intentbus.ports import WorkflowStore
from intentbus.stages.common import StageDeps, StageResult
from intentbus.state import WorkflowState
from intentbus_faults import fanout_workflow
from intentbus_faults.harness import FaultHarness
from intentbus_faults.invariants import code_of
from intentbus_faults.schedule import (
    APPROVE,
    AUTHORIZED_REKEYED,
    PROPOSED_ALTERED,
    REJECT,
    ApprovalPlan,
    fanout_input,
    incident_input,
    schedule_of,
)
from intentbus_local.faults import CRASH_AFTER, SERVER_ERROR


def codes(violations: list[str]) -> set[str]:
    return {code_of(v) for v in violations}


def publish_then_commit(
    deps: StageDeps, store: WorkflowStore, commit: Commit, envelope: Envelope
) -> StageResult | None:
    """Rule 1 broken: publish first, then record. A crash in between loses the record, and the
    redelivery decides again — at a new time, so the "same" event ids carry other contents. (The
    handler's outbox sends a batch's facts after its records, so the broken stage sends its own.)"""
    if commit.entry.outputs:
        deps.bus.publish(commit.entry.outputs)
        events = getattr(deps.bus, "inner", deps.bus)
        if isinstance(events, EventBridgeBus):
            events.send_held()
    result = store.commit(commit)
    if result.status is CommitStatus.VERSION_CONFLICT:
        return None
    outcome = Outcome.DUPLICATE if result.status is CommitStatus.ALREADY_RECORDED else commit.entry.outcome
    return StageResult(outcome=outcome, envelope=envelope, published=tuple(commit.entry.outputs))


def test_publish_before_record_with_a_crash_after_the_publish_is_caught(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(intentbus.stages.decide, "commit_then_publish", publish_then_commit)
    schedule = schedule_of(
        9101, incident_input(9101), forced={("DecideFunction:events.PutEvents", 0): CRASH_AFTER}
    )

    result = harness.run(schedule)

    assert [f.kind for f in result.injected] == [CRASH_AFTER]
    assert "e/republished-different" in codes(result.violations), result.violations


def test_the_same_schedule_with_record_then_publish_is_clean(harness: FaultHarness) -> None:
    schedule = schedule_of(
        9102, incident_input(9102), forced={("DecideFunction:events.PutEvents", 0): CRASH_AFTER}
    )

    result = harness.run(schedule)

    assert [f.kind for f in result.injected] == [CRASH_AFTER]
    assert result.violations == []
    assert result.statuses == {"incident_response t9102-inc0/run-9102-inc0": "COMPLETED"}


def test_a_tool_that_applies_its_effect_twice_is_caught(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fanout_workflow, "EFFECT_REPEATS", 2)

    result = harness.run(schedule_of(9103, fanout_input(9103)))

    assert {"a/effect-repeated", "a/journal-repeated", "a/completed-not-once"} <= codes(result.violations)


def test_a_transition_that_does_not_move_the_version_is_caught(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = state.record_result

    def record_in_place(read: WorkflowState, **changes: Any) -> WorkflowState:
        """Applies the outcome but keeps the version it read: a stale write nobody can detect."""
        return original(read, **changes).model_copy(update={"version": read.version})

    monkeypatch.setattr(intentbus.stages.record, "record_result", record_in_place)

    result = harness.run(schedule_of(9104, fanout_input(9104)))

    assert "c/versions-not-sequential" in codes(result.violations), result.violations


def test_an_input_dropped_without_a_trace_is_caught(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swallow(self: object, body: str, message_id: str | None = None) -> StageResult:
        return StageResult(outcome=Outcome.APPLIED)

    monkeypatch.setattr(intentbus.stages.validate.ValidateStage, "handle", swallow)

    result = harness.run(schedule_of(9105, fanout_input(9105)))

    assert {"b/input-lost", "d/run-stuck"} <= codes(result.violations), result.violations


def test_a_decide_that_asks_the_model_again_is_caught(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = intentbus.stages.decide.DecideStage._decide

    def ask_twice(stage: Any, turn: Any, agent: Any, context: Any) -> Any:
        original(stage, turn, agent, context)  # an answer thrown away: the model was asked for nothing
        return original(stage, turn, agent, context)

    monkeypatch.setattr(intentbus.stages.decide.DecideStage, "_decide", ask_twice)

    result = harness.run(schedule_of(9106, fanout_input(9106)))

    assert "g/model-calls" in codes(result.violations), result.violations


def test_a_decide_that_forgets_the_decision_its_sandbox_kept_is_caught(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its write failed (5xx) after the model answered; the warm retry asks again in the same sandbox."""
    original = intentbus.stages.decide.DecideStage.handle

    def forgetful(stage: Any, body: str, message_id: str | None = None) -> Any:
        try:
            return original(stage, body, message_id)
        except Exception:
            stage._decisions.clear()
            raise

    monkeypatch.setattr(intentbus.stages.decide.DecideStage, "handle", forgetful)
    write = ("DecideFunction:dynamodb.TransactWriteItems", 0)

    result = harness.run(schedule_of(9113, fanout_input(9113), forced={write: SERVER_ERROR}))

    assert [str(i) for i in result.injected] == ["server_error@DecideFunction:dynamodb.TransactWriteItems#0"]
    assert "g/model-calls" in codes(result.violations), result.violations


def test_an_approval_applied_after_its_expiry_is_caught(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Approval, "expired_at", lambda self, now: False)
    plan = ApprovalPlan(decisions=(APPROVE,), expiry_offset=60.0)
    item = replace(incident_input(9107, environment="production"), approval=plan)

    result = harness.run(schedule_of(9107, item))

    assert "f/approved-after-expiry" in codes(result.violations), result.violations


def test_approval_schedules_without_a_seam_are_clean(harness: FaultHarness) -> None:
    plans = [
        ApprovalPlan(decisions=(APPROVE, APPROVE)),
        ApprovalPlan(decisions=(APPROVE, REJECT), early=True),
        ApprovalPlan(decisions=(APPROVE,), expiry_offset=-5.0, sweep_first=True),
        ApprovalPlan(decisions=(APPROVE,), expiry_offset=5.0),
    ]
    items = [
        replace(incident_input(9108, k, environment="production"), approval=plan)
        for k, plan in enumerate(plans)
    ]

    result = harness.run(schedule_of(9108, *items))

    assert result.violations == []
    statuses = [result.statuses[f"incident_response t9108-inc{k}/run-9108-inc{k}"] for k in range(len(plans))]
    assert statuses == ["COMPLETED", "COMPLETED", "COMPLETED", "DENIED"]
    assert result.observation is not None
    asked = [len(result.observation.model_calls.get(key, [])) for key in result.observation.decided_at]
    assert len(asked) == 4 * 4  # four decisions per incident run
    assert set(asked) == {1}


def test_an_execute_that_skips_the_guards_authorization_check_is_caught(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard's claim (run alive, authorization recorded with this fact's digest) never made: a
    forged CommandAuthorized under a key of the attacker's runs its tool with the forged payload."""

    def no_claim(attempt: object) -> None:
        return None

    monkeypatch.setattr(intentbus.stages.execute._Attempt, "_claim", no_claim)

    result = harness.run(schedule_of(9109, fanout_input(9109), forge=[AUTHORIZED_REKEYED]))

    assert [forged.variant for forged, _ in result.forged] == [AUTHORIZED_REKEYED]
    assert {"h/effect-without-authorization", "i/forged-applied"} <= codes(result.violations), (
        result.violations
    )


def test_an_authorize_that_does_not_compare_the_proposal_with_the_record_is_caught(
    harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """authorize takes a CommandProposed for a pending command id at its word: a forged payload under
    that id is authorized (the policy allows it) and recorded as the command's authorization."""

    def trust(*args: object) -> None:
        return None

    monkeypatch.setattr(intentbus.stages.authorize, "require_recorded", trust)

    result = harness.run(schedule_of(9110, fanout_input(9110), forge=[PROPOSED_ALTERED]))

    assert [forged.variant for forged, _ in result.forged] == [PROPOSED_ALTERED]
    assert {"i/forged-applied", "i/forged-recorded"} <= codes(result.violations), result.violations


def test_the_same_forgeries_against_the_checking_stages_are_refused(harness: FaultHarness) -> None:
    """Without a seam, the stages check what they consume: both forgeries end quarantined as forged."""
    for seed, variant in ((9111, AUTHORIZED_REKEYED), (9112, PROPOSED_ALTERED)):
        result = harness.run(schedule_of(seed, fanout_input(seed), forge=[variant]))

        assert result.violations == [], result.violations
        assert [end for _, end in result.forged] == [
            "quarantined by execute" if variant == AUTHORIZED_REKEYED else "quarantined by authorize"
        ]
        assert result.statuses == {f"fanout_reservation t{seed}-fan0/run-{seed}-fan0": "COMPLETED"}
