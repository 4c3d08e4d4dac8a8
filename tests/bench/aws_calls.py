"""AWS calls per stage and per workflow step on the happy path, counted at botocore, on the local cloud."""

from __future__ import annotations

import json
from collections import Counter
from contextlib import AbstractContextManager
from dataclasses import dataclass

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


def measure_incident() -> tuple[dict[str, StageCalls], int]:
    """Runs the incident workflow once, in-process; returns calls by stage and the number of steps."""
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
        drive_seed_incident(cloud, recording(log))
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
    return stages, 4
