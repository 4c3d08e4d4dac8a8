"""One writer per resource: of 50 commands authorized at one resource version, exactly one runs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from intentbus.adapters.dynamodb_store import RESOURCE_SK, DynamoWorkflowStore, resource_pk
from intentbus.state import Status
from intentbus_local.cloud import LocalCloud

SEED = Path(__file__).parents[2] / "infra" / "events" / "seed_tool_call.json"
TENANT = "org_enterprise_alpha"
CUSTOMER = "cust_contended"
PROPOSALS = 50


def _proposal(n: int) -> dict[str, str]:
    envelope: dict[str, Any] = json.loads(SEED.read_text())
    envelope.update(run_id=f"run-contended-{n:02d}", idempotency_key=f"idem_contended_{n:02d}")
    # opposite changes to one record: half qualify the customer, half mark it churned
    envelope["payload"]["parameters"] = {
        "customer_id": CUSTOMER,
        "status": "qualified" if n % 2 else "churned",
    }
    return {"Source": "crm.example", "DetailType": "TOOL_EXECUTION_REQUESTED", "Detail": json.dumps(envelope)}


def test_of_50_proposals_at_one_resource_version_exactly_one_executes(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    cloud.put_events([_proposal(n) for n in range(PROPOSALS)])
    # Execute's mapping stays disabled until all 50 are authorized: every one reads the same version.
    authorized = cloud.run_until_idle(max_invocations=400, deadline_seconds=240, hold={"ExecuteFunction"})
    assert cloud.queue_depth("ExecuteQueue") == (PROPOSALS, 0, 0), authorized
    assert authorized.invocations["ExecuteFunction"] == 0

    cloud.run_until_idle(max_invocations=400, deadline_seconds=240)

    runs = store.runs(TENANT)
    assert len(runs) == PROPOSALS
    assert Counter(run.status for run in runs) == {Status.COMPLETED: 1, Status.FAILED: PROPOSALS - 1}
    (winner,) = [run for run in runs if run.status is Status.COMPLETED]
    losers = [run for run in runs if run.status is Status.FAILED]
    for run in losers:
        recorded = [e for e in store.entries(TENANT, run.run_id) if e.stage == "record"]
        assert [e.input_type for e in recorded] == ["CommandConflicted"], run.run_id
        assert run.reason is not None
        assert f"crm:{CUSTOMER}" in run.reason
        assert "not run" in run.reason
    ddb = cloud.clients.dynamodb()
    resource = ddb.get_item(
        TableName=cloud.topology.tables["WorkflowTable"],
        Key={"pk": {"S": resource_pk(TENANT, f"crm:{CUSTOMER}")}, "sk": {"S": RESOURCE_SK}},
        ConsistentRead=True,
    )["Item"]
    assert resource["version"]["N"] == "1"
    crm = ddb.get_item(
        TableName=cloud.topology.tables["CrmTable"],
        Key={"tenant_id": {"S": TENANT}, "customer_id": {"S": CUSTOMER}},
        ConsistentRead=True,
    )["Item"]
    winner_status = "qualified" if int(winner.run_id.rsplit("-", 1)[1]) % 2 else "churned"
    assert crm["status"]["S"] == winner_status
    assert cloud.queue_depth("QuarantineQueue") == (0, 0, 0)
    assert all(cloud.queue_depth(dlq) == (0, 0, 0) for dlq in cloud.topology.dlqs)
