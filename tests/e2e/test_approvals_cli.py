"""A production scale-up waits for a person; the CLI approves or rejects it and the run goes on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status
from intentbus_cli.main import main
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from tests.e2e.conftest import waiting_in_production
from tests.e2e.targets import target_args

TENANT = "org_enterprise_alpha"


@pytest.fixture
def production(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCloud]:
    with waiting_in_production(tmp_path) as cloud:
        for name, value in cloud.clients.handler_environment().items():
            monkeypatch.setenv(name, value)  # the CLI's caller: a region and (fake) credentials
        yield cloud


def cli(cloud: LocalCloud, *args: str) -> int:
    return main(
        [
            "approvals",
            *target_args(cloud),
            "--tenant",
            TENANT,
            *args,
        ]
    )


@pytest.mark.parametrize(
    ("decision", "status", "desired"), [("approve", Status.COMPLETED, 4), ("reject", Status.DENIED, 2)]
)
def test_the_cli_decides_and_the_run_finishes(
    production: LocalCloud, capsys: pytest.CaptureFixture[str], decision: str, status: Status, desired: int
) -> None:
    store = DynamoWorkflowStore(production.topology.tables["WorkflowTable"], production.clients.dynamodb())
    (run,) = store.runs(TENANT)
    assert run.status is Status.AWAITING_APPROVAL
    assert cli(production, "list") == 0
    listing = capsys.readouterr().out
    assert "scale_service" in listing
    assert "1 pending approval(s)" in listing
    approval_id = listing.split()[0]

    assert cli(production, decision, approval_id, "--reason", "checked the dashboards") == 0
    said = decision.rstrip("e") + "ed"
    assert capsys.readouterr().out.startswith(f"{said} (200): {said} by arn:aws:sts::")
    production.run_until_idle(max_invocations=100)

    final = store.state(TENANT, run.run_id)
    assert final is not None
    assert final.status is status
    assert seed.desired_count(production.clients) == desired
    assert cli(production, decision, approval_id, "--reason", "again") == 0, "deciding again: same answer"
    assert "already" in capsys.readouterr().out
