"""The demo's world: an ECS service and the CloudWatch metrics the incident workflow reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from intentbus.workflows.incident import DEPENDENCY_ERROR_METRIC, LATENCY_METRIC, METRICS_NAMESPACE

LOCAL_PRODUCER_BINDINGS = "monitoring.example=*;crm.example=*;intentbus.cli=*;tests.example=*"
"""The local cloud's ``ProducerBindings``: its sample producers may send for any tenant (not for a
deployment: there every producer is bound to its own tenants)."""

CLUSTER = "shop"
SERVICE = "checkout-api"
INITIAL_DESIRED_COUNT = 2
LATENCY_MS = (180.0, 240.0, 610.0, 880.0, 1240.0)
DEPENDENCY_ERROR_RATES = {"payments-db": 0.32, "inventory-api": 0.01}


def seed_service(clients: Any) -> None:
    ecs = clients("ecs")
    ecs.create_cluster(clusterName=CLUSTER)
    ecs.register_task_definition(
        family=SERVICE,
        containerDefinitions=[
            {
                "name": SERVICE,
                "image": "public.ecr.aws/docker/library/nginx:stable",
                "memory": 512,
                "essential": True,
            }
        ],
    )
    ecs.create_service(
        cluster=CLUSTER, serviceName=SERVICE, taskDefinition=SERVICE, desiredCount=INITIAL_DESIRED_COUNT
    )


def seed_metrics(clients: Any, *, now: datetime | None = None) -> None:
    now = now or datetime.now(UTC)
    cloudwatch = clients("cloudwatch")
    points = len(LATENCY_MS)
    cloudwatch.put_metric_data(
        Namespace=METRICS_NAMESPACE,
        MetricData=[
            {
                "MetricName": LATENCY_METRIC,
                "Dimensions": [{"Name": "Service", "Value": SERVICE}],
                "Timestamp": now - timedelta(minutes=points - index),
                "Value": value,
                "Unit": "Milliseconds",
            }
            for index, value in enumerate(LATENCY_MS)
        ],
    )
    cloudwatch.put_metric_data(
        Namespace=METRICS_NAMESPACE,
        MetricData=[
            {
                "MetricName": DEPENDENCY_ERROR_METRIC,
                "Dimensions": [
                    {"Name": "Service", "Value": SERVICE},
                    {"Name": "Dependency", "Value": dependency},
                ],
                "Timestamp": now - timedelta(minutes=1),
                "Value": rate,
                "Unit": "None",
            }
            for dependency, rate in DEPENDENCY_ERROR_RATES.items()
        ],
    )


def desired_count(clients: Any) -> int:
    services = clients("ecs").describe_services(cluster=CLUSTER, services=[SERVICE])["services"]
    return int(services[0]["desiredCount"])


def latency_event(
    *,
    tenant_id: str = "org_enterprise_alpha",
    environment: str = "dev",
    event_id: str = "evt-latency-checkout-001",
) -> dict[str, Any]:
    """What a monitoring system sends: a native envelope, the workflow fields left for validate to derive."""
    return {
        "id": event_id,
        "type": "ServiceLatencyIncreased",
        "source": "monitoring.example",
        "tenant_id": tenant_id,
        "payload": {
            "service": SERVICE,
            "cluster": CLUSTER,
            "environment": environment,
            "p99_ms": max(LATENCY_MS),
            "threshold_ms": 500.0,
        },
    }
