"""AWS calls per stage and per workflow step on the happy path, counted at botocore, on the local cloud."""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.client import BaseClient

from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.lambda_runtime import Invocation

# Every boto3 client, whichever session made it, sends its requests through this method.
_HOOKED = "_make_api_call"

STAGE_OF_FUNCTION = {
    "ValidateFunction": "validate",
    "DecideFunction": "decide",
    "AuthorizeFunction": "authorize",
    "ExecuteFunction": "execute",
    "RecordFunction": "record",
}


@dataclass
class CallCounts:
    calls: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    """Function name -> "service.Operation" -> calls made while that function ran."""
    put_events_entries: Counter[str] = field(default_factory=Counter)
    records: Counter[str] = field(default_factory=Counter)
    """Stage -> SQS records it was handed."""


@contextmanager
def counting(counts: CallCounts) -> Iterator[None]:
    """Counts every botocore call made inside a Lambda invocation (the runtime sets the function name)."""
    original = vars(BaseClient)[_HOOKED]

    def counted(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        if function:
            counts.calls[function][f"{client.meta.service_model.service_name}.{operation}"] += 1
            if operation == "PutEvents":
                counts.put_events_entries[function] += len(params.get("Entries", []))
        return original(client, operation, params)

    setattr(BaseClient, _HOOKED, counted)
    try:
        yield
    finally:
        setattr(BaseClient, _HOOKED, original)


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


def measure_incident() -> tuple[dict[str, StageCalls], int]:
    """Runs the incident workflow once, in-process; returns calls by stage and the number of steps."""
    counts = CallCounts()
    with LocalCloud(mode="inprocess") as cloud:
        names = {info.name: STAGE_OF_FUNCTION[logical] for logical, info in cloud.topology.functions.items()}

        def observe(invocation: Invocation) -> None:
            counts.records[STAGE_OF_FUNCTION[invocation.function_logical_id]] += len(
                invocation.event["Records"]
            )

        cloud.add_observer(observe)
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        event = seed.latency_event()
        with counting(counts):
            cloud.put_events(
                [{"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)}]
            )
            cloud.run_until_idle(max_invocations=200)
        assert seed.desired_count(cloud.clients) == 4, "the benchmark's workflow did not complete"
    stages: dict[str, StageCalls] = {}
    for name, stage in names.items():
        calls = counts.calls[name]
        dynamodb = sum(n for op, n in calls.items() if op.startswith("dynamodb."))
        puts = calls["events.PutEvents"]
        other = {
            op: n for op, n in calls.items() if not op.startswith("dynamodb.") and op != "events.PutEvents"
        }
        stages[stage] = StageCalls(
            records=counts.records[stage],
            dynamodb_calls=dynamodb,
            put_events_calls=puts,
            put_events_entries=counts.put_events_entries[name],
            other_calls=other,
        )
    return stages, 4
