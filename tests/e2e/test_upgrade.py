"""Runs in flight when this release deploys still complete.

The previous release wrote no authorization items and no ``checks`` on a run's state, and sent a
workflow's outcome events to validate. Each test stops a run midway, rewrites its items or queues a
message as that release left them, and lets this release finish it.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from intentbus.adapters.dynamodb_store import AUTH_PREFIX, STATE_SK, DynamoWorkflowStore, run_pk
from intentbus.state import Status
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from tests.botocore_calls import CallLog, recording
from tests.e2e.test_trust_boundaries import BINDINGS, SEED_CALL, TENANT, approve, emit, quarantined


@pytest.fixture
def cloud(request: pytest.FixtureRequest) -> Iterator[LocalCloud]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    parameters = {"Environment": str(request.param), "ProducerBindings": BINDINGS}
    with LocalCloud(mode="inprocess", parameters=parameters) as running:
        seed.seed_service(running.clients)
        seed.seed_metrics(running.clients)
        yield running


def as_the_previous_release_wrote(cloud: LocalCloud, tenant_id: str, run_id: str) -> None:
    dynamodb = cloud.clients.dynamodb()
    table = cloud.topology.tables["WorkflowTable"]
    items: list[dict[str, Any]] = dynamodb.query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": run_pk(tenant_id, run_id)}},
    )["Items"]
    for item in items:
        sk = item["sk"]["S"]
        if sk.startswith(AUTH_PREFIX):
            dynamodb.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
        elif sk == STATE_SK:
            state = json.loads(item["state"]["S"])
            del state["checks"]
            dynamodb.put_item(TableName=table, Item={**item, "state": {"S": json.dumps(state)}})


@pytest.mark.parametrize("cloud", ["dev"], indirect=True)
def test_a_command_authorized_before_the_upgrade_runs_after_it(cloud: LocalCloud) -> None:
    store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
    emit(cloud, {**SEED_CALL, "tenant_id": TENANT}, source="crm.example")
    cloud.run_until_idle(max_invocations=20, hold={"ExecuteFunction"})  # authorized, not yet run
    (run,) = store.runs(TENANT)
    assert run.status is Status.RUNNING
    as_the_previous_release_wrote(cloud, TENANT, run.run_id)

    cloud.run_until_idle(max_invocations=20)
    assert store.state(TENANT, run.run_id).status is Status.COMPLETED  # type: ignore[union-attr]
    assert quarantined(cloud) == []


@pytest.mark.parametrize("cloud", ["production"], indirect=True)
def test_a_run_waiting_for_approval_before_the_upgrade_completes_when_approved(cloud: LocalCloud) -> None:
    store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
    emit(cloud, seed.latency_event(environment="production"))
    cloud.run_until_idle(max_invocations=100)
    (approval,) = store.pending_approvals(TENANT)
    as_the_previous_release_wrote(cloud, TENANT, approval.run_id)

    assert approve(cloud, approval) == 200
    cloud.run_until_idle(max_invocations=100)
    assert store.state(TENANT, approval.run_id).status is Status.COMPLETED  # type: ignore[union-attr]
    assert seed.desired_count(cloud.clients) == 4
    assert quarantined(cloud) == []


@pytest.mark.parametrize("cloud", ["dev"], indirect=True)
def test_an_outcome_queued_for_validate_before_the_upgrade_is_decided_once(cloud: LocalCloud) -> None:
    """The release before sent a workflow's outcome to validate; this one sends it to decide. An outcome
    in validate's queue when this release deploys is accepted there and decided; the same outcome sent
    again by record's redelivery, now to decide, is stale: one scale-up, one decision for the step."""
    store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
    emit(cloud, seed.latency_event())
    cloud.run_until_idle(max_invocations=20, hold={"RecordFunction"})
    cloud.run_until_idle(max_invocations=20, hold={"DecideFunction"})  # record published the outcome
    (outcome,) = cloud.queue_messages("DecideQueue")
    assert outcome.json()["source"] == "intentbus.workflow"
    cloud.clients.sqs().send_message(  # where the previous release's rule put it
        QueueUrl=cloud.topology.queues["ValidateQueue"].url, MessageBody=outcome.body
    )

    with recording(CallLog()) as log:
        cloud.run_until_idle(max_invocations=100)

    (run,) = store.runs(TENANT)
    assert run.status is Status.COMPLETED
    assert log.count("ecs", "UpdateService") == 1
    assert seed.desired_count(cloud.clients) == 4
    entries = store.entries(TENANT, run.run_id)
    outcome_type = outcome.json()["detail-type"]
    decided = [e.outcome.value for e in entries if e.stage == "decide" and e.input_type == outcome_type]
    assert sorted(decided) == ["applied", "stale"], "whichever route came second"
    validated = [e.input_type for e in entries if e.stage == "validate"]
    assert validated == ["ServiceLatencyIncreased", outcome_type]
    assert quarantined(cloud) == []
