"""The incident workflow's tools on moto (ECS, CloudWatch), then the whole workflow through the five
real stage cores and real adapters: in dev it scales and completes, in production it waits for a person."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from intentbus.adapters.clients import AwsClients
from intentbus.approval_record import Approval
from intentbus.definition import ToolContext, ToolError
from intentbus.extensions import RUN_ENDED
from intentbus.journal import ApprovalStatus
from intentbus.state import Status
from intentbus.workflows import incident
from tests.fakes import raw_body
from tests.integration.conftest_moto import (
    IDEMPOTENCY_TABLE,
    WORKFLOW_TABLE,
    Hop,
    MotoPipeline,
    Resources,
    aws,  # noqa: F401  (fixture)
    client,
    dynamodb_budget,
    resources,  # noqa: F401  (fixture)
    shared_session,
)

CLUSTER = "shop"
SERVICE = "checkout-api"
TENANT = "acme"


def provision_shop(ecs: Any, cloudwatch: Any) -> None:
    """ECS service checkout-api (2 tasks) in cluster shop, and its metrics of the last minutes."""
    ecs.create_cluster(clusterName=CLUSTER)
    ecs.register_task_definition(
        family=SERVICE, containerDefinitions=[{"name": "app", "image": "checkout:1", "memory": 256}]
    )
    ecs.create_service(cluster=CLUSTER, serviceName=SERVICE, taskDefinition=SERVICE, desiredCount=2)
    now = datetime.now(UTC)
    latency = [
        {
            "MetricName": incident.LATENCY_METRIC,
            "Dimensions": [{"Name": "Service", "Value": SERVICE}],
            "Timestamp": now - timedelta(minutes=minutes),
            "Value": value,
            "Unit": "Milliseconds",
        }
        for minutes, value in ((6, 900.0), (4, 1850.0), (2, 1200.0))
    ]
    dependencies = [
        {
            "MetricName": incident.DEPENDENCY_ERROR_METRIC,
            "Dimensions": [{"Name": "Service", "Value": SERVICE}, {"Name": "Dependency", "Value": name}],
            "Timestamp": now - timedelta(minutes=3),
            "Value": rate,
        }
        for name, rate in (("payments-db", 0.3), ("inventory-api", 0.01))
    ]
    # Another service's failing dependency must not be blamed on checkout-api.
    unrelated = {
        "MetricName": incident.DEPENDENCY_ERROR_METRIC,
        "Dimensions": [{"Name": "Service", "Value": "search-api"}, {"Name": "Dependency", "Value": "es"}],
        "Timestamp": now - timedelta(minutes=3),
        "Value": 0.9,
    }
    cloudwatch.put_metric_data(
        Namespace=incident.METRICS_NAMESPACE, MetricData=[*latency, *dependencies, unrelated]
    )


def desired_count(ecs: Any, service: str = SERVICE) -> int:
    (found,) = ecs.describe_services(cluster=CLUSTER, services=[service])["services"]
    return int(found["desiredCount"])


# ================================================================== the tools, one by one


@dataclass
class Shop:
    clients: AwsClients
    ecs: Any

    def context(self) -> ToolContext:
        return ToolContext(
            tenant_id=TENANT,
            run_id="run_tools",
            idempotency_key="idem_tools",
            clients=self.clients,
            settings={},
        )


@pytest.fixture
def shop(aws: None) -> Shop:  # noqa: F811
    clients = AwsClients(shared_session())
    provision_shop(clients.client("ecs"), clients.client("cloudwatch"))
    return Shop(clients, clients.client("ecs"))


def _ref(**extra: Any) -> dict[str, Any]:
    return {"service": SERVICE, "cluster": CLUSTER, "environment": "dev", **extra}


def test_collect_diagnostics_reads_the_max_p99_and_the_datapoint_count(shop: Shop) -> None:
    result = incident.collect_diagnostics.run(incident.CollectDiagnostics(**_ref()), shop.context())

    assert result == {**_ref(), "p99_ms": 1850.0, "datapoints": 3, "window_minutes": 15}
    # What the tool returns is the next step's event.
    assert incident.DiagnosisRequested.model_validate(dict(result)).p99_ms == 1850.0


def test_collect_diagnostics_honours_its_window(shop: Shop) -> None:
    result = incident.collect_diagnostics.run(
        incident.CollectDiagnostics(**_ref(window_minutes=3)), shop.context()
    )

    assert (result["p99_ms"], result["datapoints"]) == (1200.0, 1)


def test_check_dependencies_names_the_worst_and_lists_all(shop: Shop) -> None:
    result = incident.check_dependencies.run(incident.CheckDependencies(**_ref()), shop.context())

    assert result["dependency"] == "payments-db"
    assert result["error_rate"] == pytest.approx(0.3)
    assert result["checked"] == pytest.approx({"payments-db": 0.3, "inventory-api": 0.01})
    incident.DependencyFailureSuspected.model_validate(dict(result))


def test_check_dependencies_without_metrics_is_a_permanent_failure(shop: Shop) -> None:
    with pytest.raises(ToolError, match="no dependency metrics") as raised:
        incident.check_dependencies.run(
            incident.CheckDependencies(**{**_ref(), "service": "cart-api"}), shop.context()
        )
    assert raised.value.retryable is False


def test_plan_recovery_doubles_the_service(shop: Shop) -> None:
    result = incident.plan_recovery.run(
        incident.PlanRecovery(**_ref(dependency="payments-db")), shop.context()
    )

    assert (result["current_count"], result["desired_count"]) == (2, 4)
    assert "payments-db" in result["reason"]
    incident.RecoveryProposed.model_validate(dict(result))
    assert desired_count(shop.ecs) == 2  # planning changes nothing


def test_plan_recovery_caps_at_the_policy_ceiling(shop: Shop) -> None:
    shop.ecs.update_service(cluster=CLUSTER, service=SERVICE, desiredCount=15)

    result = incident.plan_recovery.run(
        incident.PlanRecovery(**_ref(dependency="payments-db")), shop.context()
    )

    assert (result["current_count"], result["desired_count"]) == (15, 20)


def test_scale_service_sets_the_desired_count(shop: Shop) -> None:
    result = incident.scale_service.run(
        incident.ScaleService(**_ref(desired_count=4, from_count=2)), shop.context()
    )

    assert desired_count(shop.ecs) == 4
    assert result == {**_ref(desired_count=4), "previous_count": 2}
    incident.RecoveryCompleted.model_validate(dict(result))


def test_scale_service_twice_leaves_the_same_service(shop: Shop) -> None:
    command = incident.ScaleService(**_ref(desired_count=4, from_count=2))

    incident.scale_service.run(command, shop.context())
    again = incident.scale_service.run(command, shop.context())

    assert desired_count(shop.ecs) == 4
    assert again["previous_count"] == 2, "a repeat reports the count it was planned from, not its own effect"
    assert again["desired_count"] == 4


@pytest.mark.parametrize(
    ("tool", "command"),
    [
        (
            incident.scale_service,
            incident.ScaleService(**_ref(service="ghost-api", desired_count=4, from_count=2)),
        ),
        (incident.plan_recovery, incident.PlanRecovery(**_ref(service="ghost-api", dependency="db"))),
    ],
    ids=["scale_service", "plan_recovery"],
)
def test_a_missing_service_is_a_permanent_tool_error(shop: Shop, tool: Any, command: Any) -> None:
    with pytest.raises(ToolError, match="ghost-api not found") as raised:
        tool.run(command, shop.context())
    assert raised.value.retryable is False
    assert desired_count(shop.ecs) == 2


@pytest.mark.parametrize(
    ("tool", "command"),
    [
        (
            incident.scale_service,
            incident.ScaleService(**_ref(cluster="gone", desired_count=4, from_count=2)),
        ),
        (incident.plan_recovery, incident.PlanRecovery(**_ref(cluster="gone", dependency="db"))),
    ],
    ids=["scale_service", "plan_recovery"],
)
def test_a_missing_cluster_is_a_permanent_tool_error(shop: Shop, tool: Any, command: Any) -> None:
    with pytest.raises(ToolError) as raised:
        tool.run(command, shop.context())
    assert raised.value.retryable is False


# ================================================================== the whole workflow, for real


def _incident_body(environment: str) -> str:
    detail = {
        "tenant_id": TENANT,
        "payload": {
            "service": SERVICE,
            "cluster": CLUSTER,
            "environment": environment,
            "p99_ms": 1850.0,
            "threshold_ms": 800.0,
        },
    }
    return raw_body(detail, detail_type="ServiceLatencyIncreased")


STEPS = [
    ("ServiceLatencyIncreased", "collect_diagnostics"),
    ("DiagnosisRequested", "check_dependencies"),
    ("DependencyFailureSuspected", "plan_recovery"),
    ("RecoveryProposed", "scale_service"),
]


@dataclass
class World:
    pipeline: MotoPipeline
    dynamodb: Any
    ecs: Any

    def idempotency_records(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.dynamodb.scan(TableName=IDEMPOTENCY_TABLE, ConsistentRead=True)[
            "Items"
        ]
        return items

    def pending_approvals(self) -> list[Approval]:
        items = self.dynamodb.query(
            TableName=WORKFLOW_TABLE,
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"T#{TENANT}#APPROVALS#PENDING"}},
        )["Items"]
        return [Approval.model_validate_json(item["approval"]["S"]) for item in items]


def _world(moto_resources: Resources) -> World:
    ecs = client("ecs")
    provision_shop(ecs, client("cloudwatch"))
    return World(MotoPipeline(moto_resources), client("dynamodb"), ecs)


def _run_id(hops: list[Hop]) -> str:
    (first,) = hops[0].published
    return first.run_id


def _assert_happy_path_costs(world: World, hops: list[Hop]) -> None:
    for hop in hops:
        assert len(hop.dynamodb(world.pipeline.pipeline_tables)) <= dynamodb_budget(hop.stage), (
            hop.stage,
            hop.calls,
        )
        assert len(hop.put_events) == (1 if hop.published else 0), (hop.stage, hop.calls)
        assert hop.of("sqs") == [], f"{hop.stage} quarantined on the happy path"


def test_incident_in_dev_scales_the_service_and_completes(resources: Resources) -> None:  # noqa: F811
    world = _world(resources)

    hops = world.pipeline.run(_incident_body("dev"))

    assert desired_count(world.ecs) == 4
    run_id = _run_id(hops)
    state = world.pipeline.runtime.store.state(TENANT, run_id)
    assert state is not None
    assert state.status is Status.COMPLETED
    assert state.steps_taken == 4
    # The log: validate accepted the alert; each step is decide, authorize, record (execute's record is
    # the idempotency table); each outcome goes from record straight to decide, but the final one, which
    # ends the run and goes to no stage.
    expected: list[tuple[str, str]] = [("validate", STEPS[0][0])]
    for event, command in STEPS:
        expected += [("decide", event), ("authorize", command), ("record", "CommandExecuted")]
    entries = world.pipeline.runtime.store.entries(TENANT, run_id)
    assert [(entry.stage, entry.input_type) for entry in entries] == expected
    assert [hop.stage for hop in hops] == ["validate", *(["decide", "authorize", "execute", "record"] * 4)]
    records = world.idempotency_records()
    assert len(records) == 4
    assert {record["status"]["S"] for record in records} == {"COMPLETED"}
    # Side effects happen only where policy has authorized them: in execute.
    assert {hop.stage for hop in hops if hop.of("ecs") or hop.of("monitoring")} == {"execute"}
    (completed,) = [e for hop in hops for e in hop.published if e.type == "RecoveryCompleted"]
    assert completed.payload["previous_count"] == 2
    assert completed.payload["desired_count"] == 4
    assert completed.extensions == {RUN_ENDED: True}
    _assert_happy_path_costs(world, hops)


def test_incident_in_production_waits_for_approval(
    resources: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("INTENTBUS_ENVIRONMENT", "production")
    world = _world(resources)

    hops = world.pipeline.run(_incident_body("production"))

    run_id = _run_id(hops)
    state = world.pipeline.runtime.store.state(TENANT, run_id)
    assert state is not None
    assert state.status is Status.AWAITING_APPROVAL
    (approval,) = world.pending_approvals()
    assert approval.status is ApprovalStatus.PENDING
    assert approval.run_id == run_id
    assert approval.command.type == "scale_service"
    assert approval.command.payload["desired_count"] == 4
    assert desired_count(world.ecs) == 2
    last = hops[-1]
    assert (last.stage, last.outcome) == ("authorize", "waiting")
    assert [e.type for e in last.published] == ["HumanApprovalRequired"]
    assert json.loads(last.delivered_bodies[0])["detail"]["payload"]["approval_id"] == approval.approval_id
    assert len(world.idempotency_records()) == 3  # scale_service never ran
    assert [c for hop in hops for c in hop.of("ecs") if c.operation == "UpdateService"] == []
    _assert_happy_path_costs(world, hops)
