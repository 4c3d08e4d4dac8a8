"""``intentbus quarantine``: a malformed request with its reason, shown, repaired and resubmitted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status
from intentbus_cli.main import main
from intentbus_local.cloud import LocalCloud

TENANT = "acme"
BROKEN: dict[str, Any] = {
    "id": "crm-broken-1",
    "type": "TOOL_EXECUTION_REQUESTED",
    "source": "crm.example",
    "payload": {"tool_name": "crm_record_upsert", "parameters": {"customer_id": "cust_7", "status": "lead"}},
}


@pytest.fixture
def quarantined(cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch) -> LocalCloud:
    for name, value in cloud.clients.handler_environment().items():
        monkeypatch.setenv(name, value)
    cloud.put_events([{"Source": "crm.example", "DetailType": BROKEN["type"], "Detail": json.dumps(BROKEN)}])
    cloud.run_until_idle(max_invocations=20)
    assert cloud.queue_depth("QuarantineQueue") == (1, 0, 0)
    return cloud


def quarantine(cloud: LocalCloud, *args: str) -> int:
    where = ["--stack", cloud.topology.stack_name, "--endpoint-url", str(cloud.endpoint_url)]
    return main(["quarantine", *args, *where, "--wait-seconds", "0"])


def only_message_id(cloud: LocalCloud, capsys: pytest.CaptureFixture[str]) -> str:
    assert quarantine(cloud, "list") == 0
    out = capsys.readouterr().out
    assert "1 quarantined message(s) in QuarantineQueue" in out
    (row,) = [line for line in out.splitlines() if "TOOL_EXECUTION_REQUESTED" in line]
    assert row.split()[2:5] == ["validate", "TOOL_EXECUTION_REQUESTED", "tenant_id"]
    assert row.endswith("tenant_id: Field required")
    return row.split()[0]


def test_a_repaired_message_is_resubmitted_to_its_stage_and_the_run_completes(
    quarantined: LocalCloud,
    store: DynamoWorkflowStore,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    cloud = quarantined
    message_id = only_message_id(cloud, capsys)

    assert quarantine(cloud, "show", message_id) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["body"]["reason"] == "tenant_id: Field required"
    assert shown["body"]["body"]["detail"] == BROKEN
    assert shown["resubmittable"] == "yes"

    assert quarantine(cloud, "resubmit", message_id, "--dry-run") == 0
    assert "QuarantineQueue: would resubmit 1" in capsys.readouterr().out
    assert cloud.queue_depth("QuarantineQueue") == (1, 0, 0)

    repaired = tmp_path / "repaired.json"
    repaired.write_text(json.dumps({**BROKEN, "tenant_id": TENANT}))
    assert quarantine(cloud, "resubmit", message_id, "--detail", str(repaired)) == 0
    out = capsys.readouterr().out
    assert f"resubmitted {message_id} TOOL_EXECUTION_REQUESTED to " in out
    assert "ValidateQueue" in out
    assert cloud.queue_depth("QuarantineQueue") == (0, 0, 0)
    (sent,) = cloud.queue_messages("ValidateQueue")
    assert sent.message_attributes["intentbus.resubmitted_from"]["StringValue"] == message_id

    cloud.run_until_idle(max_invocations=50)
    (run,) = store.runs(TENANT)
    assert run.status is Status.COMPLETED
    assert cloud.queue_depth("QuarantineQueue") == (0, 0, 0)


def test_resubmitted_unrepaired_it_is_quarantined_again_with_its_lineage(
    quarantined: LocalCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud = quarantined
    first = only_message_id(cloud, capsys)
    assert quarantine(cloud, "resubmit", "--all") == 0
    assert "QuarantineQueue: resubmitted 1" in capsys.readouterr().out
    cloud.run_until_idle(max_invocations=20)
    again = only_message_id(cloud, capsys)
    assert again != first
    assert quarantine(cloud, "show", again) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["body"]["source_message_id"], "the resubmitted message's id, as validate got it"


@pytest.mark.parametrize(
    ("args", "expected", "status"),
    [
        (["resubmit"], "intentbus: name the message ids to resubmit, or pass --all", 2),
        (["resubmit", "--all", "m-1"], "intentbus: --all resubmits every message: name no message ids", 2),
        (["show", "m-unknown"], "intentbus: no message m-unknown in QuarantineQueue", 1),
    ],
)
def test_a_bad_request_gets_one_line(
    quarantined: LocalCloud, capsys: pytest.CaptureFixture[str], args: list[str], expected: str, status: int
) -> None:
    assert quarantine(quarantined, *args) == status
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(expected)
