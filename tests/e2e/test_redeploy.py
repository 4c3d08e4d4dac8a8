"""Redeploying the whole topology with runs in flight: a waiting approval, a command queued for execute.

A redeploy that keeps a run's workflow lets it finish; one that drops the workflow, or registers
another version of it, ends the run FAILED with the reason, in its state and in ``intentbus runs show``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status, WorkflowState
from intentbus_cli.main import main
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.http_front import LocalUser
from tests import versioned_workflow
from tests.e2e.conftest import waiting_in_production
from tests.e2e.test_approvals_api import call, front

pytestmark = pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning")  # moto's CloudFormation

TENANT = "org_enterprise_alpha"
OTHER = "globex"
REMOVED = "workflow 'incident_response' is not registered in this deployment"
REPLACED = "the run started under version '1' of workflow 'publishing'; this deployment has version '2' only"


def store_of(cloud: LocalCloud) -> DynamoWorkflowStore:
    return DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())


def approve(cloud: LocalCloud, tenant: str) -> dict[str, Any]:
    """A person approves the tenant's one pending approval through the (redeployed) approvals API."""
    (pending,) = store_of(cloud).pending_approvals(tenant)
    api = front(cloud, LocalUser(email="ann@example.com", tenant_id=tenant))
    try:
        base = f"{api.url}/v1/tenants/{tenant}/approvals"
        status, answer = call(
            f"{base}/{pending.approval_id}/approve", "POST", {"reason": "go"}, token=api.session_token
        )
    finally:
        api.close()
    assert status == 200, answer
    return dict(answer)


def the_run(cloud: LocalCloud, tenant: str) -> WorkflowState:
    (run,) = store_of(cloud).runs(tenant)
    return run


def runs_show(cloud: LocalCloud, run: WorkflowState, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    args = ["runs", "show", run.run_id, "--tenant", run.tenant_id, "--stack", cloud.topology.stack_name]
    assert main([*args, "--endpoint-url", str(cloud.endpoint_url)]) == 0
    return capsys.readouterr().out


def nothing_lost(cloud: LocalCloud) -> None:
    assert cloud.queue_messages("QuarantineQueue") == []
    for dlq in cloud.topology.dlqs.values():
        assert cloud.queue_messages(dlq.logical_id) == [], dlq.logical_id


def as_caller(cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in cloud.clients.handler_environment().items():
        monkeypatch.setenv(name, value)  # the CLI's caller: a region and (fake) credentials


def test_a_redeploy_while_an_approval_waits_then_the_approval_completes_the_run(tmp_path: Path) -> None:
    with waiting_in_production(tmp_path) as cloud:
        (pending,) = store_of(cloud).pending_approvals(TENANT)

        redeployed = cloud.redeploy(parameters={"LogLevel": "DEBUG"})

        assert redeployed.functions["ApprovalsFunction"].environment["POWERTOOLS_LOG_LEVEL"] == "DEBUG"
        assert store_of(cloud).pending_approvals(TENANT) == [pending], "the table kept the approval"
        assert approve(cloud, TENANT)["answer"] == "approved"
        assert cloud.run_until_idle(max_invocations=100).idle

        assert the_run(cloud, TENANT).status is Status.COMPLETED
        assert seed.desired_count(cloud.clients) == 4
        nothing_lost(cloud)


def test_a_redeploy_that_removes_the_workflow_ends_its_runs_in_flight_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with waiting_in_production(tmp_path) as cloud:
        as_caller(cloud, monkeypatch)
        second = seed.latency_event(tenant_id=OTHER, environment="production", event_id="evt-latency-2")
        cloud.put_events(
            [{"Source": "monitoring.example", "DetailType": second["type"], "Detail": json.dumps(second)}]
        )
        cloud.run_until_idle(max_invocations=100, hold=("ExecuteFunction",))
        assert cloud.queue_depth("ExecuteQueue") == (1, 0, 0), "its first command waits for execute"
        assert the_run(cloud, OTHER).status is Status.RUNNING

        cloud.redeploy(parameters={"Workflows": "intentbus.workflows.direct_tool"})
        assert approve(cloud, TENANT)["answer"] == "approved"
        assert cloud.run_until_idle(max_invocations=100).idle

        for tenant in (TENANT, OTHER):
            run = the_run(cloud, tenant)
            assert (run.status, run.reason) == (Status.FAILED, REMOVED)
            header = runs_show(cloud, run, capsys).splitlines()[0]
            assert header == f"run {run.run_id} (tenant {tenant}): incident_response FAILED ({REMOVED})"
        assert seed.desired_count(cloud.clients) == 2, "nothing was scaled after the redeploy"
        nothing_lost(cloud)


def test_a_run_whose_workflow_version_changed_fails_loudly_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    versioned_workflow.published.clear()
    with LocalCloud(
        mode="server",
        logs_dir=tmp_path / "logs",
        parameters={"Workflows": f"{versioned_workflow.MODULE}:v1"},
    ) as cloud:
        as_caller(cloud, monkeypatch)
        draft = {"tenant_id": TENANT, "type": "DraftReady", "payload": {"draft": "spring-notes"}}
        cloud.put_events(
            [{"Source": "tests.example", "DetailType": "DraftReady", "Detail": json.dumps(draft)}]
        )
        cloud.run_until_idle(max_invocations=50)
        assert the_run(cloud, TENANT).status is Status.AWAITING_APPROVAL

        cloud.redeploy(parameters={"Workflows": f"{versioned_workflow.MODULE}:v2"})
        assert approve(cloud, TENANT)["answer"] == "approved"
        assert cloud.run_until_idle(max_invocations=50).idle

        run = the_run(cloud, TENANT)
        assert (run.status, run.definition_version, run.reason) == (Status.FAILED, "1", REPLACED)
        assert versioned_workflow.published == [], "the tool never ran"
        out = runs_show(cloud, run, capsys)
        assert out.splitlines()[0] == f"run {run.run_id} (tenant {TENANT}): publishing FAILED ({REPLACED})"
        skipped = next(line for line in out.splitlines() if "CommandSkipped" in line)
        assert "WorkflowFailed" in skipped
        assert skipped.endswith(REPLACED), "record's entry for execute's skip says why"
        nothing_lost(cloud)
