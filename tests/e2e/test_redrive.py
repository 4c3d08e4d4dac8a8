"""``intentbus dlq``: 100 dead-lettered requests, a redrive interrupted halfway, re-run: all 100 once.

The validate stage fails every delivery (throttled DynamoDB) until SQS dead-letters all 100 direct
tool requests. The first redrive is interrupted (Ctrl-C) between sending its sixth batch back and
deleting it from the DLQ, so ten requests are in both queues; the re-run moves the other fifty. The
ten that arrive twice are deduped by the pipeline: every CRM record is upserted exactly once.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status
from intentbus_cli.main import main
from intentbus_cli.sqs_queues import SqsQueues
from intentbus_local.cloud import LocalCloud
from intentbus_local.faults import throttling_error
from tests.botocore_calls import Call, CallLog, recording

TENANT = "acme"
COUNT = 100


def request(n: int) -> dict[str, Any]:
    return {
        "id": f"crm-request-{n:03d}",
        "type": "TOOL_EXECUTION_REQUESTED",
        "source": "crm.example",
        "tenant_id": TENANT,
        "payload": {
            "tool_name": "crm_record_upsert",
            "parameters": {"customer_id": f"cust_{n:03d}", "status": "qualified"},
        },
    }


def dead_letter(cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch, count: int) -> LocalCloud:
    """``count`` requests the validate stage fails until SQS moves each to ValidateDLQ."""
    for name, value in cloud.clients.handler_environment().items():
        monkeypatch.setenv(name, value)  # the CLI's caller: a region and (fake) credentials
    validate = cloud.topology.functions["ValidateFunction"].name
    rng = random.Random(6)

    def throttled(call: Call) -> Exception | None:
        if call.function != validate:
            return None
        return throttling_error(call.service, call.operation, call.params, rng)

    with recording(CallLog(), faults=(throttled,)):
        cloud.put_events(
            [
                {"Source": "crm.example", "DetailType": r["type"], "Detail": json.dumps(r)}
                for r in map(request, range(count))
            ]
        )
        cloud.run_until_idle(max_invocations=1000, deadline_seconds=300)
    assert cloud.queue_depth("ValidateDLQ") == (count, 0, 0)
    return cloud


@pytest.fixture
def dead_lettered(cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch) -> LocalCloud:
    return dead_letter(cloud, monkeypatch, COUNT)


@pytest.fixture
def a_few_dead_lettered(cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch) -> LocalCloud:
    return dead_letter(cloud, monkeypatch, 20)


def dlq(cloud: LocalCloud, *args: str) -> int:
    return main(
        [
            "dlq",
            *args,
            "--stack",
            cloud.topology.stack_name,
            "--endpoint-url",
            str(cloud.endpoint_url),
            "--wait-seconds",
            "0",
        ]
    )


def crm_upserts(log: CallLog, cloud: LocalCloud) -> list[str]:
    crm = cloud.topology.tables["CrmTable"]
    return [
        call.params["Key"]["customer_id"]["S"]
        for call in log.calls
        if (call.service, call.operation) == ("dynamodb", "UpdateItem") and call.params["TableName"] == crm
    ]


def interrupt_the_sixth_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's Ctrl-C lands after the sixth batch was sent back, before it is deleted."""
    real = SqsQueues.delete_batch
    deletes: list[int] = []

    def delete_batch(self: SqsQueues, queue_url: str, entries: Sequence[tuple[str, str]]) -> set[str]:
        deletes.append(len(entries))
        if len(deletes) == 6:
            raise KeyboardInterrupt
        return real(self, queue_url, entries)

    monkeypatch.setattr(SqsQueues, "delete_batch", delete_batch)


def test_an_interrupted_redrive_rerun_processes_all_100_once(
    dead_lettered: LocalCloud,
    store: DynamoWorkflowStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cloud = dead_lettered
    assert dlq(cloud, "list", "--queue", "ValidateDLQ") == 0
    listing = capsys.readouterr().out
    rows = [line.split() for line in listing.splitlines() if line.startswith("ValidateDLQ ")]
    assert len(rows) == COUNT
    assert {row[4] for row in rows} == {"TOOL_EXECUTION_REQUESTED"}
    assert {row[5] for row in rows} == {TENANT}
    assert all(int(row[2]) >= 5 for row in rows), "each was received maxReceiveCount times"
    assert "100 message(s): ValidateDLQ 100" in listing

    assert dlq(cloud, "redrive", "--queue", "ValidateDLQ", "--dry-run") == 0
    assert "ValidateDLQ: would move 100" in capsys.readouterr().out
    assert cloud.queue_depth("ValidateDLQ") == (COUNT, 0, 0)

    with recording(CallLog()) as log:
        with monkeypatch.context() as patched:
            interrupt_the_sixth_delete(patched)
            assert dlq(cloud, "redrive", "--queue", "ValidateDLQ") == 130
        out, err = capsys.readouterr()
        assert "no StartMessageMoveTask here; moving message by message" in out
        assert "ValidateDLQ: moved 50/~100" in out
        assert "interrupted" in err
        assert cloud.queue_depth("ValidateDLQ") == (50, 0, 0), "the sixth batch was released, not lost"
        assert cloud.queue_depth("ValidateQueue") == (60, 0, 0)
        lineage = SqsQueues(cloud.clients.sqs(), wait_seconds=0)
        first = lineage.receive(
            cloud.topology.queues["ValidateQueue"].url, max_messages=1, visibility_timeout=0
        )
        assert (
            first[0].message_attributes["intentbus.redriven_from"]["StringValue"].startswith("ValidateDLQ/")
        )

        cloud.run_until_idle(max_invocations=1000, deadline_seconds=300)
        assert dlq(cloud, "redrive", "--queue", "ValidateDLQ") == 0
        assert "ValidateDLQ: moved 50" in capsys.readouterr().out
        cloud.run_until_idle(max_invocations=1000, deadline_seconds=300)

    assert cloud.queue_depth("ValidateDLQ") == (0, 0, 0)
    assert cloud.queue_depth("QuarantineQueue") == (0, 0, 0)
    upserts = crm_upserts(log, cloud)
    assert sorted(upserts) == [f"cust_{n:03d}" for n in range(COUNT)], "every effect exactly once"
    runs = store.runs(TENANT)
    assert len(runs) == COUNT
    assert {run.status for run in runs} == {Status.COMPLETED}
    for run in runs[:10]:
        stages = [entry.stage for entry in store.entries(TENANT, run.run_id)]
        assert stages.count("validate") == 1, "the request, once"
        assert stages.count("decide") == 0, "its TOOL_EXECUTION_COMPLETED ends the run: sent to no stage"
        assert stages.count("record") == 1
    assert dlq(cloud, "list") == 0
    assert "0 message(s): " in capsys.readouterr().out


def test_redrive_max_moves_that_many(
    a_few_dead_lettered: LocalCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    assert dlq(a_few_dead_lettered, "redrive", "--max", "15") == 0
    out = capsys.readouterr().out
    assert "ValidateDLQ: moved 15" in out
    assert "BusDeliveryDLQ: ~0 message(s)" in out, "every DLQ of the stack, the empty ones said so"
    assert a_few_dead_lettered.queue_depth("ValidateDLQ") == (5, 0, 0)
    assert a_few_dead_lettered.queue_depth("ValidateQueue") == (15, 0, 0)


def test_dlq_show_prints_one_message_in_full(
    a_few_dead_lettered: LocalCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    dead_lettered = a_few_dead_lettered
    assert dlq(dead_lettered, "list", "--queue", "ValidateDLQ") == 0
    message_id = next(
        line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("ValidateDLQ ")
    )
    assert dlq(dead_lettered, "show", message_id) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["queue"] == "ValidateDLQ"
    assert shown["message_id"] == message_id
    assert shown["body"]["detail"]["payload"]["tool_name"] == "crm_record_upsert"
    assert dlq(dead_lettered, "show", "no-such-message") == 1
    assert capsys.readouterr().err.strip().startswith("intentbus: no message no-such-message in ")
