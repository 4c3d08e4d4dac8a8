"""AWS calls per stage and per workflow step on the happy path, counted at botocore, on the local cloud."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from intentbus.workflows.incident import DEPENDENCY_ERROR_METRIC, LATENCY_METRIC, METRICS_NAMESPACE
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.lambda_runtime import Invocation
from tests.botocore_calls import CallLog, recording

STAGE_OF_FUNCTION = {
    "ValidateFunction": "validate",
    "DecideFunction": "decide",
    "AuthorizeFunction": "authorize",
    "ExecuteFunction": "execute",
    "RecordFunction": "record",
}


@dataclass(frozen=True)
class StageCalls:
    records: int
    dynamodb_calls: int
    put_events_calls: int
    put_events_entries: int
    other_calls: dict[str, int]

    @property
    def dynamodb_per_event(self) -> float:
        return self.dynamodb_calls / self.records

    @property
    def publishes_per_event(self) -> float:
        return self.put_events_calls / self.records


def drive_seed_incident(cloud: LocalCloud, observed: AbstractContextManager[object]) -> None:
    """The seed incident, from its latency alert to checkout-api scaled 2 -> 4, its run inside ``observed``
    (the service and metrics it needs are seeded before)."""
    seed.seed_service(cloud.clients)
    seed.seed_metrics(cloud.clients)
    event = seed.latency_event()
    with observed:
        cloud.put_events(
            [{"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)}]
        )
        cloud.run_until_idle(max_invocations=200)
    assert seed.desired_count(cloud.clients) == 4, "the seed incident did not complete"


FLEET_RUNS = 10
"""Incidents run at once: per stage, one SQS batch (the template's ``BatchSize``) of distinct runs."""


def fleet_service(index: int) -> str:
    return f"{seed.SERVICE}-{index}"


def _seed_fleet(clients: Any, runs: int) -> None:
    """``runs`` services of the seed's cluster, each with the seed's metrics (under its own name)."""
    ecs, cloudwatch = clients("ecs"), clients("cloudwatch")
    ecs.create_cluster(clusterName=seed.CLUSTER)
    for index in range(runs):
        name = fleet_service(index)
        container = {"name": name, "image": "public.ecr.aws/docker/library/nginx:stable", "memory": 512}
        ecs.register_task_definition(family=name, containerDefinitions=[container])
        ecs.create_service(
            cluster=seed.CLUSTER,
            serviceName=name,
            taskDefinition=name,
            desiredCount=seed.INITIAL_DESIRED_COUNT,
        )
    now = datetime.now(UTC)
    for index in range(runs):
        service = {"Name": "Service", "Value": fleet_service(index)}
        latency = [
            {
                "MetricName": LATENCY_METRIC,
                "Dimensions": [service],
                "Timestamp": now - timedelta(minutes=len(seed.LATENCY_MS) - at),
                "Value": value,
                "Unit": "Milliseconds",
            }
            for at, value in enumerate(seed.LATENCY_MS)
        ]
        errors = [
            {
                "MetricName": DEPENDENCY_ERROR_METRIC,
                "Dimensions": [service, {"Name": "Dependency", "Value": dependency}],
                "Timestamp": now - timedelta(minutes=1),
                "Value": rate,
                "Unit": "None",
            }
            for dependency, rate in seed.DEPENDENCY_ERROR_RATES.items()
        ]
        cloudwatch.put_metric_data(Namespace=METRICS_NAMESPACE, MetricData=latency + errors)


def drive_fleet(cloud: LocalCloud, observed: AbstractContextManager[object], runs: int = FLEET_RUNS) -> None:
    """``runs`` seed incidents at once, each on its own service, their runs inside ``observed``: each
    stage's queue then holds one record per run, which the poller hands over as one batch."""
    _seed_fleet(cloud.clients, runs)
    entries = []
    for index in range(runs):
        event = seed.latency_event(event_id=f"evt-latency-fleet-{index:03d}")
        event["payload"]["service"] = fleet_service(index)
        entries.append({"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)})
    with observed:
        for start in range(0, len(entries), 10):  # PutEvents takes 10 entries
            cloud.put_events(entries[start : start + 10])
        cloud.run_until_idle(max_invocations=200 * runs)
    ecs = cloud.clients("ecs")
    names = [fleet_service(index) for index in range(runs)]
    counts = [
        s["desiredCount"] for s in ecs.describe_services(cluster=seed.CLUSTER, services=names)["services"]
    ]
    assert counts == [4] * runs, f"the fleet's incidents did not all complete: {counts}"


def measure_fleet(runs: int = FLEET_RUNS) -> tuple[dict[str, StageCalls], int]:
    """``measure_incident`` for ``runs`` incidents at once (``drive_fleet``): what batches of distinct runs
    cost per record. Returns calls by stage and the number of steps."""
    return _measure(lambda cloud, observed: drive_fleet(cloud, observed, runs), steps=4 * runs)


def measure_incident() -> tuple[dict[str, StageCalls], int]:
    """Runs the incident workflow once, in-process; returns calls by stage and the number of steps."""
    return _measure(drive_seed_incident, steps=4)


def _measure(
    drive: Callable[[LocalCloud, AbstractContextManager[object]], None], *, steps: int
) -> tuple[dict[str, StageCalls], int]:
    log = CallLog()
    records: Counter[str] = Counter()
    with LocalCloud(mode="inprocess") as cloud:
        names = {
            info.name: STAGE_OF_FUNCTION[logical]
            for logical, info in cloud.topology.functions.items()
            if logical in STAGE_OF_FUNCTION
        }

        def observe(invocation: Invocation) -> None:
            if invocation.function_logical_id in STAGE_OF_FUNCTION:
                records[STAGE_OF_FUNCTION[invocation.function_logical_id]] += len(invocation.event["Records"])

        cloud.add_observer(observe)
        drive(cloud, recording(log))
    stages: dict[str, StageCalls] = {}
    for name, stage in names.items():
        calls = log.by_function(name)
        by_operation = Counter(f"{call.service}.{call.operation}" for call in calls)
        stages[stage] = StageCalls(
            records=records[stage],
            dynamodb_calls=sum(1 for call in calls if call.service == "dynamodb"),
            put_events_calls=by_operation["events.PutEvents"],
            put_events_entries=sum(
                len(call.params["Entries"]) for call in calls if call.operation == "PutEvents"
            ),
            other_calls={
                op: n for op, n in by_operation.items() if op.split(".")[0] not in ("dynamodb", "events")
            },
        )
    return stages, steps
