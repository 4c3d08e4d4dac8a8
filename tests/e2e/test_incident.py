"""The incident workflow over the real topology: EventBridge, SQS, DynamoDB, ECS and CloudWatch on moto."""

from __future__ import annotations

import json

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from tests.botocore_calls import CallLog, recording

STEP = ["decide", "authorize", "record"]
"""A step's entries; a workflow's outcome event goes from record straight to decide."""


def emit(cloud: LocalCloud, envelope: dict[str, object]) -> None:
    cloud.put_events(
        [
            {
                "Source": str(envelope["source"]),
                "DetailType": str(envelope["type"]),
                "Detail": json.dumps(envelope),
            }
        ]
    )


def test_incident_runs_to_recovery_with_one_scale_action(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    seed.seed_service(cloud.clients)
    seed.seed_metrics(cloud.clients)
    event = seed.latency_event()
    with recording(CallLog()) as log:
        emit(cloud, event)
        summary = cloud.run_until_idle(max_invocations=100)

    assert summary.idle
    assert log.count("ecs", "UpdateService") == 1
    assert seed.desired_count(cloud.clients) == 4
    (run,) = store.runs(str(event["tenant_id"]))
    assert run.status is Status.COMPLETED
    assert run.steps_taken == 4
    entries = store.entries(run.tenant_id, run.run_id)
    assert [entry.stage for entry in entries] == ["validate", *STEP * 4]
    assert [entry.input_type for entry in entries if entry.stage == "validate"] == ["ServiceLatencyIncreased"]
    assert [entry.input_type for entry in entries if entry.stage == "decide"] == [
        "ServiceLatencyIncreased",
        "DiagnosisRequested",
        "DependencyFailureSuspected",
        "RecoveryProposed",
    ]  # RecoveryCompleted ends the run: marked so, it goes to no stage
    assert [entry.input_type for entry in entries if entry.stage == "authorize"] == [
        "collect_diagnostics",
        "check_dependencies",
        "plan_recovery",
        "scale_service",
    ]
    versions = [entry.version for entry in entries if entry.stage in ("decide", "record")]
    assert versions == sorted(versions), "every transition moved the version forward"
    completed = cloud.clients.dynamodb().scan(TableName=cloud.topology.tables["IdempotencyTable"])["Items"]
    assert sorted(item["status"]["S"] for item in completed) == ["COMPLETED"] * 4


def test_the_same_alert_delivered_three_times_is_one_run_and_one_scale(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    seed.seed_service(cloud.clients)
    seed.seed_metrics(cloud.clients)
    event = seed.latency_event()
    with recording(CallLog()) as log:
        for _ in range(3):
            emit(cloud, event)
        cloud.run_until_idle(max_invocations=200)

    assert log.count("ecs", "UpdateService") == 1
    assert seed.desired_count(cloud.clients) == 4
    (run,) = store.runs(str(event["tenant_id"]))
    assert run.status is Status.COMPLETED
    validated = [
        e for e in store.entries(run.tenant_id, run.run_id) if e.input_type == "ServiceLatencyIncreased"
    ]
    assert [e.stage for e in validated].count("validate") == 1
