"""``intentbus runs``: the demo's run, approved, told from its durable log, as a table and as JSON."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status
from intentbus_cli import run_view
from intentbus_cli.main import main
from intentbus_local.cloud import LocalCloud
from tests.e2e.conftest import waiting_in_production
from tests.e2e.targets import target_args

pytestmark = pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning")  # moto's CloudFormation

TENANT = "org_enterprise_alpha"
STEP = ["decide", "authorize", "execute", "record"]
# The alert validated, then four steps (the last one waiting for a person): a workflow's outcome event goes
# from record straight to decide, but the last, which ends the run and goes to no stage.
STAGES = ["validate", *STEP * 3, "decide", "authorize", "approval", "execute", "record"]
KINDS = {
    "validate": "event",
    "decide": "decision",
    "authorize": "verdict",
    "approval": "approval",
    "execute": "execution",
    "record": "outcome",
}


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCloud, str]]:
    """The demo's run: the production scale-up waits, a person approves, the run completes."""
    warnings.filterwarnings("ignore", module="moto")
    with pytest.MonkeyPatch.context() as env, waiting_in_production(tmp_path_factory.mktemp("runs")) as cloud:
        for name, value in cloud.clients.handler_environment().items():
            env.setenv(name, value)  # the CLI's caller: a region and (fake) credentials
        store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        (pending,) = store.pending_approvals(TENANT)
        approve = [
            "approvals",
            *target_args(cloud),
            "--tenant",
            TENANT,
            "approve",
            pending.approval_id,
            "--reason",
            "checked the dashboards",
        ]
        assert main(approve) == 0
        cloud.run_until_idle(max_invocations=100)
        (run,) = store.runs(TENANT)
        assert run.status is Status.COMPLETED
        yield cloud, run.run_id


def runs(cloud: LocalCloud, *args: str) -> int:
    return main(
        [
            "runs",
            *args,
            "--tenant",
            TENANT,
            "--stack",
            cloud.topology.stack_name,
            "--endpoint-url",
            str(cloud.endpoint_url),
        ]
    )


def test_runs_show_prints_every_stage_in_order(
    approved: tuple[LocalCloud, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cloud, run_id = approved
    assert runs(cloud, "show", run_id) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"run {run_id} (tenant {TENANT}): incident_response COMPLETED")
    rows = [line.split() for line in lines if line[:4].isdigit()]
    assert [row[2] for row in rows] == STAGES
    assert all(row[3] == KINDS[row[2]] for row in rows)
    times = [row[0] for row in rows]
    assert times == sorted(times)
    by_stage = {row[2]: row for row in rows}
    assert by_stage["approval"][6].startswith("arn:aws:sts::"), "the approver"
    assert ["authorize", "verdict", "scale_service", "waiting"] in [row[2:6] for row in rows]
    assert any(row[6] == "tool:scale_service" for row in rows)
    assert any(row[6] == "agent:triage" for row in rows)
    assert any(row[6].startswith("policy:") for row in rows)
    assert f"{len(STAGES)} moment(s) in the durable log" in out


def test_runs_show_json_validates_against_the_shipped_schema(
    approved: tuple[LocalCloud, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cloud, run_id = approved
    shipped = json.loads(run_view.SCHEMA_PATH.read_text())
    assert shipped == run_view.schema(), "regenerate it: python -m intentbus_cli.run_view"

    assert runs(cloud, "show", run_id, "--json") == 0
    view = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(shipped)
    jsonschema.validate(view, shipped, cls=jsonschema.Draft202012Validator)
    assert view["format"] == "intentbus.run/1"
    assert view["status"] == "COMPLETED"
    assert [event["stage"] for event in view["timeline"]] == STAGES
    approval = next(event for event in view["timeline"] if event["kind"] == "approval")
    assert approval["ids"]["approval_id"] == approval["input_id"]
    assert approval["ids"]["command_id"]
    executions = [event for event in view["timeline"] if event["kind"] == "execution"]
    assert [event["type"] for event in executions] == [
        "collect_diagnostics",
        "check_dependencies",
        "plan_recovery",
        "scale_service",
    ]
    assert all(event["published"][0]["type"] == "CommandExecuted" for event in executions)

    broken = {**view, "timeline": [{**view["timeline"][0], "kind": "guess"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, shipped, cls=jsonschema.Draft202012Validator)


def test_runs_list_filters_by_status(
    approved: tuple[LocalCloud, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cloud, run_id = approved
    assert runs(cloud, "list", "--status", "completed") == 0
    out = capsys.readouterr().out
    assert any(line.split()[:3] == [run_id, "incident_response", "COMPLETED"] for line in out.splitlines())
    assert f"1 run(s) for {TENANT} with status COMPLETED" in out

    assert runs(cloud, "list", "--status", "AWAITING_APPROVAL") == 0
    assert f"0 run(s) for {TENANT}" in capsys.readouterr().out

    assert runs(cloud, "list", "--json") == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["run_id"], listed["status"]) == (run_id, "COMPLETED")


def test_runs_with_a_table_instead_of_a_stack_and_an_unknown_run(
    approved: tuple[LocalCloud, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cloud, run_id = approved
    table = ["--table", cloud.topology.tables["WorkflowTable"], "--endpoint-url", str(cloud.endpoint_url)]
    assert main(["runs", "show", run_id, "--tenant", TENANT, "--json", *table]) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == run_id
    assert main(["runs", "show", "run_missing", "--tenant", TENANT, *table]) == 1
    assert capsys.readouterr().err.strip() == f"intentbus: no run run_missing for tenant {TENANT}"


def test_runs_without_a_table_or_stack_says_what_to_pass(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("WORKFLOW_TABLE", "INTENTBUS_STACK"):
        monkeypatch.delenv(name, raising=False)
    assert main(["runs", "list", "--tenant", TENANT]) == 3  # configuration
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("intentbus: no workflow table: pass --table or --stack")
