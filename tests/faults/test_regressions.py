"""Defects the fault harness found, one focused schedule each (strict xfail until fixed).

Each test is the smallest schedule that shows the defect: its inputs and the one fault forced at a
named site (``<Function>:<service>.<Operation>``, occurrence n within the schedule). When the defect
is fixed the test passes, strict xfail turns that into a failure: remove the mark (and the code from
test_schedules.KNOWN_DEFECTS).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

import pytest

from intentbus_faults import fanout_workflow
from intentbus_faults.harness import FaultHarness
from intentbus_faults.invariants import code_of
from intentbus_faults.schedule import (
    AUTHORIZED_UNRECORDED,
    FANOUT,
    REJECT,
    ApprovalPlan,
    Input,
    fanout_input,
    generate,
    incident_input,
    schedule_of,
)
from intentbus_local import seed as world
from intentbus_local.faults import CRASH_AFTER, DUPLICATE, REORDER, SERVER_ERROR, THROTTLE, TIMEOUT_AFTER


def codes(violations: list[str]) -> set[str]:
    return {code_of(v) for v in violations}


def test_execute_skips_a_command_whose_run_already_ended(harness: FaultHarness) -> None:
    lines = [
        {"sku": "sku-a", "quantity": 2, "channel": "web"},
        {"sku": "sku-b", "quantity": 3, "channel": "blocked"},  # denied: the run ends DENIED
    ]
    schedule = schedule_of(
        9201,
        fanout_input(9201, lines=lines),
        # sku-a's first execution: its in-progress put (in the guard's transaction) is throttled, so it
        # is retried 180 s later
        forced={("ExecuteFunction:dynamodb.TransactWriteItems", 0): THROTTLE},
    )

    result = harness.run(schedule)

    assert result.statuses == {f"{FANOUT} t9201-fan0/run-9201-fan0": "DENIED"}
    assert result.observation is not None
    journal = fanout_workflow.journal_key("t9201-fan0", "run-9201-fan0", "sku-a")
    assert result.observation.journal[journal] == 0, "sku-a was reserved for a run that had been denied"
    assert "c/executed-after-end" not in codes(result.violations), result.violations
    run = next(r for r in result.observation.runs if r.ref.workflow == FANOUT)
    skipped = [e for e in run.entries if e.stage == "record" and e.input_type == "CommandSkipped"]
    assert [e.outcome.value for e in skipped] == ["stale"], "the skipped command was not recorded"


def test_a_lost_response_from_a_reconcile_tool_is_not_applied_twice(harness: FaultHarness) -> None:
    schedule = schedule_of(
        9202,
        fanout_input(9202),
        # the first UpdateItem execute makes is sku-a's journal write (Powertools' own comes after)
        forced={("ExecuteFunction:dynamodb.UpdateItem", 0): TIMEOUT_AFTER},
    )

    result = harness.run(schedule)

    assert result.observation is not None
    journal = fanout_workflow.journal_key("t9202-fan0", "run-9202-fan0", "sku-a")
    assert result.observation.journal[journal] == 1, result.violations
    assert not {"a/effect-repeated", "a/journal-repeated"} & codes(result.violations), result.violations


def test_scale_service_after_a_crash_records_the_count_before_the_scale(harness: FaultHarness) -> None:
    schedule = schedule_of(
        9203, incident_input(9203), forced={("ExecuteFunction:ecs.UpdateService", 0): CRASH_AFTER}
    )

    result = harness.run(schedule)

    assert result.observation is not None
    (run,) = result.observation.runs
    assert run.state is not None
    assert run.state.status.value == "COMPLETED"
    completed = [
        output.payload
        for entry in run.entries
        if entry.stage == "record"
        for output in entry.outputs
        if output.type == "RecoveryCompleted"
    ]
    assert completed == [
        {
            "service": "checkout-api",
            "cluster": "shop",
            "environment": "dev",
            "previous_count": 2,
            "desired_count": 4,
        }
    ]


def test_an_input_validate_dead_lettered_is_reported_in_the_dlq(harness: FaultHarness) -> None:
    envelope = world.latency_event(tenant_id="t9204", event_id="evt-9204")  # no run_id, as producers send
    alert = Input(
        envelope=envelope, source="monitoring.example", detail_type="ServiceLatencyIncreased", run=None
    )
    # validate's put fails on all five deliveries: the alert ends in ValidateDLQ
    forced = {("ValidateFunction:dynamodb.PutItem", n): THROTTLE for n in range(5)}

    result = harness.run(schedule_of(9204, alert, forced=forced))

    assert result.observation is not None
    assert [item.bucket for item in result.observation.report.inputs] == ["dlq"]
    assert "b/input-lost" not in codes(result.violations), result.violations


def test_a_failed_reconcile_check_never_lets_the_tool_run_blindly_again(harness: FaultHarness) -> None:
    """Found by the long run (seed 100459). Powertools could not mark sku-b's record COMPLETED (throttled)
    after the journal write, so the retry found the record lapsed and reconciled; the reconcile read was
    throttled too, Powertools deleted the in-progress record on that exception, and the next retry looked
    fresh and reserved sku-b a second time. Now a failing check keeps the record in progress."""
    schedule = schedule_of(
        9206,
        fanout_input(9206),
        forced={
            ("ExecuteFunction:dynamodb.UpdateItem", 3): THROTTLE,  # sku-b's COMPLETED update
            ("ExecuteFunction:dynamodb.GetItem", 0): THROTTLE,  # the reconcile read after the lapse
        },
    )

    result = harness.run(schedule)

    assert [str(f).split(" ")[0] for f in result.injected] == [
        "throttle@ExecuteFunction:dynamodb.UpdateItem#3",
        "throttle@ExecuteFunction:dynamodb.GetItem#0",
    ]
    assert result.observation is not None
    journal = fanout_workflow.journal_key("t9206-fan0", "run-9206-fan0", "sku-b")
    assert result.observation.journal[journal] == 1, result.violations
    assert result.statuses == {f"{FANOUT} t9206-fan0/run-9206-fan0": "COMPLETED"}
    assert result.violations == []


def test_a_duplicate_after_days_of_virtual_time_is_still_a_duplicate(harness: FaultHarness) -> None:
    """Found by the long run (from seed 200455 on, once approval schedules had moved the virtual clock
    past the seven-day retention): the idempotency adapter moved Powertools' "now" to virtual time but
    left the expiry it wrote in real time, so every completed record looked expired and a redelivered
    CommandAuthorized ran its tool again. Now every time Powertools writes or compares is virtual."""
    harness.cloud.clock.advance(8 * 86400)
    schedule = schedule_of(9207, fanout_input(9207), forced={("ExecuteQueue:message", 0): DUPLICATE})

    result = harness.run(schedule)

    assert [str(f).split(" ")[0] for f in result.injected] == ["duplicate@ExecuteQueue:message#0"]
    assert result.observation is not None
    for sku in ("sku-a", "sku-b"):
        journal = fanout_workflow.journal_key("t9207-fan0", "run-9207-fan0", sku)
        assert result.observation.journal[journal] == 1, result.violations
    assert result.violations == []


def test_an_expiry_sweep_that_dies_after_its_write_still_ends_the_run(harness: FaultHarness) -> None:
    """Found by the long run (seed 401109): the sweep wrote EXPIRED and the run's new version, then
    timed out before publishing CommandDenied. The approval was no longer PENDING, so no later sweep
    looked at it and the run waited forever. Now a decided or expired approval stays in the sweep's
    index until its events are published, and the next sweep publishes the recorded ones again."""
    plan = ApprovalPlan(decisions=(REJECT,), expiry_offset=5.0, sweep_first=True)
    item = replace(incident_input(9208, environment="production"), approval=plan)
    schedule = schedule_of(
        9208, item, forced={("ExpireApprovalsFunction:dynamodb.TransactWriteItems", 0): TIMEOUT_AFTER}
    )

    result = harness.run(schedule)

    assert [str(f).split(" ")[0] for f in result.injected] == [
        "timeout_after@ExpireApprovalsFunction:dynamodb.TransactWriteItems#0"
    ]
    assert result.statuses == {"incident_response t9208-inc0/run-9208-inc0": "DENIED"}
    assert result.violations == []


def test_a_forged_authorization_whose_refusal_left_its_record_in_progress_is_still_refused(
    harness: FaultHarness,
) -> None:
    """Found by a forge run (seed 4259, from ``--seed 4242``): a forged CommandAuthorized, unchanged, for
    a real command no verdict had allowed (pending, or waiting for approval). The guard refused it, but
    Powertools' delete of the in-progress record was throttled; once the lease lapsed, the redelivered
    forgery took the record over and execute's after-lapse path (no reconcile for
    ``reserve_unchecked``) answered CommandOutcomeUnknown for it, without asking the guard, and
    stored that as the command's result: the real command, once approved, would get it back."""
    lines = [
        {"sku": "sku-a", "quantity": 2, "channel": "partner", "ledger": "legacy"},
        {"sku": "sku-b", "quantity": 3, "channel": "partner", "ledger": "legacy"},
    ]
    schedule = schedule_of(
        9209,
        fanout_input(9209, lines=lines),
        forced={("ExecuteFunction:dynamodb.DeleteItem", 0): THROTTLE},
        forge=[AUTHORIZED_UNRECORDED],
    )

    result = harness.run(schedule)

    assert [str(f).split(" ")[0] for f in result.injected] == [
        "throttle@ExecuteFunction:dynamodb.DeleteItem#0"
    ]
    assert [end for _, end in result.forged] == ["quarantined by execute"], result.forged
    assert result.violations == []


def test_lapsed_leases_after_server_errors_at_execute_do_not_repeat_a_reservation(
    harness: FaultHarness,
) -> None:
    """Seed 2135 of ``make faults``' generator: six injected 5xx errors, four of them on execute's calls,
    and two lapsed leases. The saves of two results failed, so their records stayed in progress; on
    redelivery the lapse was noticed, but the guard's own claim then failed with a 5xx, Powertools
    deleted the record that remembered the earlier attempt, and the next delivery ran reserve_stock a
    second time. (It showed first with a guard that read before it claimed: its separate claim call is
    where the schedule's fault landed.)"""
    schedule = generate(2135)

    result = harness.run(schedule)

    assert {f.kind for f in result.injected} == {"server_error"}
    assert result.violations == [], result.violations
    assert result.observation is not None
    for journal, applied in result.observation.journal.items():
        assert applied <= 1, f"{journal} applied {applied} times"


def test_a_forgery_that_takes_over_a_lapsed_record_leaves_it_in_progress_for_the_real_command(
    harness: FaultHarness,
) -> None:
    """The attack: copy a real CommandAuthorized for sku-a exactly (same command, key and payload) under
    an id of your own, and have it land while the real attempt's lease has lapsed and before the real
    redelivery. The real attempt reserved sku-a, then the save of its result failed (5xx), so its record
    stayed in progress; the forged copy, delivered while the lease was held, came back in the same batch
    as the real redelivery, ahead of it. It took the lapsed record over and the guard refused it, and
    Powertools deleted the record with the refusal: the real redelivery found the key free and reserved
    sku-a a second time. Now the refused forgery leaves the record in progress; the real redelivery
    waits for that lease, then goes to its reconcile check, which finds the reservation."""
    schedule = schedule_of(
        9232,
        fanout_input(9232),
        forced={
            # the real sku-a runs first, the forged copy after it (into its held lease, so it is retried)
            ("ExecuteQueue:batch", 0): REORDER,
            ("ExecuteFunction:dynamodb.UpdateItem", 1): SERVER_ERROR,  # the save of sku-a's result
        },
        forge=[AUTHORIZED_UNRECORDED],
    )

    result = harness.run(schedule)

    assert [str(i).split(" ")[0] for i in result.injected] == [
        "reorder@ExecuteQueue:batch#0",
        "server_error@ExecuteFunction:dynamodb.UpdateItem#1",
    ]
    assert [end for _, end in result.forged] == ["quarantined by execute"], result.forged
    ((forged, _),) = result.forged
    assert "sku-a" in json.dumps(forged.envelope["payload"]["command"]["payload"])
    assert result.lapses == 2, "the forgery took the real lapsed record; the real redelivery, the forgery's"
    assert result.observation is not None
    journal = fanout_workflow.journal_key("t9232-fan0", "run-9232-fan0", "sku-a")
    assert result.observation.journal[journal] == 1, "sku-a was reserved twice"
    assert _reconciled_skus(result.observation.published) == ["sku-a"]
    assert result.statuses == {f"{FANOUT} t9232-fan0/run-9232-fan0": "COMPLETED"}
    assert result.violations == [], result.violations


def _reconciled_skus(published: Mapping[str, list[str]]) -> list[str]:
    """The skus of the CommandExecuted facts execute answered from a reconcile check."""
    skus = []
    for details in published.values():
        for detail in {*details}:
            fact = json.loads(detail)
            if fact.get("type") == "CommandExecuted" and fact["payload"].get("reconciled"):
                skus.append(fact["payload"]["command"]["payload"]["sku"])
    return sorted(skus)


@pytest.mark.parametrize(
    "claim_call",
    [
        # execute's reads: sku-a's and sku-b's guard reads, together for their batch (0), sku-a's
        # redelivery (1), after the lapse (2)
        ("ExecuteFunction:dynamodb.BatchGetItem", 2),
        # execute's UpdateItems: sku-a's journal write (0), the save of its result (1), sku-b's two (2, 3),
        # and sku-a's resource move after the lapse (4)
        ("ExecuteFunction:dynamodb.UpdateItem", 4),
    ],
    ids=["guard-read", "resource-move"],
)
def test_a_failed_claim_after_a_lapsed_attempt_keeps_the_attempt_in_doubt(
    harness: FaultHarness, claim_call: tuple[str, int]
) -> None:
    """The failure: sku-a's reservation took effect, then the save of its result failed (5xx), so its
    record stayed in progress and its lease lapsed. The redelivery noticed the lapse, but the guard's
    claim on that path failed too (5xx, on its read or on its write); had the record been released with
    the error, the next delivery would find the key free and reserve again. It stays in progress, and
    the reconcile check finds the reservation."""
    save_of_sku_a = ("ExecuteFunction:dynamodb.UpdateItem", 1)
    schedule = schedule_of(
        9210, fanout_input(9210), forced={save_of_sku_a: SERVER_ERROR, claim_call: SERVER_ERROR}
    )

    result = harness.run(schedule)

    site, occurrence = claim_call
    assert [str(i) for i in result.injected] == [
        f"server_error@{save_of_sku_a[0]}#{save_of_sku_a[1]}",
        f"server_error@{site}#{occurrence}",
    ]
    assert result.lapses >= 1
    assert result.observation is not None
    journal = fanout_workflow.journal_key("t9210-fan0", "run-9210-fan0", "sku-a")
    assert result.observation.journal[journal] == 1, result.violations
    assert result.violations == [], result.violations


def test_a_decide_sandbox_lost_before_its_record_lets_the_next_one_ask_again(harness: FaultHarness) -> None:
    """Seed 4322 of ``make faults``' generator: decide asked the model, its write failed (5xx) and the
    sandbox kept the decision for the retry; the redelivery's sandbox then crashed, so the next cold
    start had nothing kept and asked again. That is the documented cost of a lost sandbox, not a
    repeated ask: the checker counted every ask, whichever sandbox made it, and called it a violation.
    Each sandbox still asks at most once (``test_checker_catches`` plants a warm retry that asks again)."""
    schedule = schedule_of(
        9211,
        fanout_input(9211),
        forced={
            ("DecideFunction:dynamodb.TransactWriteItems", 0): SERVER_ERROR,
            ("DecideFunction:dynamodb.BatchGetItem", 1): CRASH_AFTER,
        },
    )

    result = harness.run(schedule)

    assert [str(i) for i in result.injected] == [
        "server_error@DecideFunction:dynamodb.TransactWriteItems#0",
        "crash_after@DecideFunction:dynamodb.BatchGetItem#1",
    ]
    assert result.violations == [], result.violations
    assert result.statuses["fanout_reservation t9211-fan0/run-9211-fan0"] == "COMPLETED"
    assert result.observation is not None
    key = ("t9211-fan0", "run-9211-fan0", fanout_workflow.REQUESTED)
    assert [asked.sandbox for asked in result.observation.model_calls[key]] == [1, 2]
