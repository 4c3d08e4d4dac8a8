"""What a million workflow steps cost at list prices, measured from a real incident run on the local cloud.

``measure_cost() -> dict[str, object]``, for ``.bench/results.json`` under ``cost``:

* ``per_million_steps_usd``: intentbus's charges per million steps under sustained load (a step: one
  command through the five stages; the incident run makes 4) as the template deploys by default
  (tables on demand), ``by_service_usd`` the same by service; ``per_million_steps_usd_at_a_trickle``
  (and its ratio) when every message travels alone and every run is traced;
* ``ratio_sfn_standard``: that against Step Functions Standard running the same five states per step
  (5 transitions and 5 Lambda requests per step; its Lambda duration left out, in its favour);
* ``per_million_steps_usd_provisioned`` and ``ratio_sfn_standard_provisioned``: the same load with
  ``TableBillingMode=PROVISIONED``: the same units, billed as capacity-hours at
  ``provisioned_utilisation`` (auto scaling's target); its minimum capacity, billed while idle, is
  ``idle_monthly_usd.provisioned_minimum_capacity`` (not in that section's ``total``, the default's);
* ``floor``: the same run with DynamoDB billed as if no write were in a transaction
  (``standard_writes``), and as if also every strongly consistent read were eventually consistent
  (``standard_writes_eventual_reads``): the most a store layout that writes and reads the same items
  could save by using transactions or consistent reads otherwise (``dynamodb_floors``);
* ``alternatives_usd``: Step Functions Standard and Express and Lambda durable functions per million
  steps, with ``alternatives_limits`` (what each cannot do);
* ``per_step``: the measured figures behind it (DynamoDB write and read units, index writes, modelled
  Lambda milliseconds, log bytes, PutEvents and SQS chunks), ``dynamodb_by_table`` the units by table
  and index, ``dynamodb_by_call`` the write and read units by stage and call;
* ``idle_monthly_usd``: what a deployment costs per month before any step (alarms, dashboards, KMS,
  schedules, idle polls); ``storage_gb_per_million_steps``: what stays in the table.

How each is measured: DynamoDB units by each item's real size before and after every call
(``tests.bench.capacity``); Lambda duration as the handler's own CPU time (its AWS calls taken out),
scaled to the 512 MB function's share of a vCPU, plus an assumed in-region latency per AWS call
(``CALL_LATENCY_MS``); logs as the bytes the functions wrote, Lambda's START/END/REPORT lines included;
PutEvents by each entry's size in 64 KB chunks (plus the archive's bytes); SQS as one send per
message, and a receive and a delete per batch of ``LOAD_BATCH`` (per message at a trickle), each in
64 KB chunks; X-Ray one trace per run, sampled as Lambda samples by default under load. Under load a
mapping hands each invocation a batch of ``LOAD_BATCH`` records, so what comes once per invocation is
shared by that many records: Lambda's request charge, the time of the calls made once a batch
(``PER_BATCH_CALLS``: the batch's PutEvents; ``BATCH_READ_STAGES``: the snapshot read authorize and
record (and validate, for an outcome event queued for it) make once for a batch of distinct runs) and
the log lines that are not a record's own (Lambda's START/END/REPORT and the metrics line, which grows
by ``EMF_BYTES_PER_EXTRA_RECORD`` for each record it aggregates); the rest of the billed duration stays
the records' sum. The workflow's own tool calls (ECS, CloudWatch) are left out: any orchestrator makes
them. A warm-up run first, so imports and first clients (a cold start, once per sandbox) are not
counted.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.client import BaseClient

from intentbus_faults.calls import Call, CallLog, Proceed, recording
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.lambda_runtime import Invocation, LambdaRuntime
from tests.bench import idle, prices
from tests.bench.capacity import CapacityMeter, Usage, item_size

ROOT = Path(__file__).resolve().parents[2]
STAGES = {
    "ValidateFunction": "validate",
    "DecideFunction": "decide",
    "AuthorizeFunction": "authorize",
    "ExecuteFunction": "execute",
    "RecordFunction": "record",
}
PIPELINE_SERVICES = frozenset({"dynamodb", "events", "sqs", "s3"})
"""The AWS services intentbus itself calls; the rest are the workflow's tools."""

CALL_LATENCY_MS = {
    "dynamodb.TransactWriteItems": 12.0,
    "dynamodb.BatchGetItem": 6.0,
    "dynamodb": 5.0,
    "events": 15.0,
    "sqs": 10.0,
    "s3": 20.0,
}
"""Assumption: an in-region AWS call's round trip (single-digit ms for DynamoDB, AWS's stated figure)."""
PER_BATCH_CALLS = frozenset({"events.PutEvents"})
"""Calls a stage makes once per batch, not per record: a batch's facts are published together when its
records are handled. Under load their latency and client-side work are shared by the batch's records."""
BATCH_READ_STAGES = frozenset({"validate", "authorize", "record"})
"""Stages whose snapshot read (``dynamodb.BatchGetItem``) is made once for a batch of distinct runs
(``intentbus.batch_reads``): this run has one incident, so each of its batches reads alone, where a
batch under load holds distinct runs. Decide is left out: with a model configured it reads each record
alone, just before deciding."""
BOTOCORE_CLIENT_MS = 0.45
"""botocore's own work per call (signing, serializing, parsing), measured with the HTTP send faked."""
CHUNK = 64 * 1024
LOAD_BATCH = 10
"""Under sustained load (10 messages a second or more per stage) the mappings receive and delete in
batches of the template's BatchSize, 10; one by one at a trickle."""
LOAD_TRACE_SAMPLING = 0.05
"""Lambda's default X-Ray sampling under load: the first request each second and 5% of the rest; a
run's later stages follow its first one's decision."""
EMF_BYTES_PER_EXTRA_RECORD = 16
"""The metrics line of a batch: one more latency value and one more count per metric for each further
record (``12.345,`` and ``1.0,`` twice)."""
PROVISIONED_UTILISATION = 0.70
"""Assumption: with TableBillingMode PROVISIONED, auto scaling keeps the capacity in use at its target
(the template's default TableTargetUtilization, 70%) on average under sustained load; the headroom is
billed all the same."""
SFN_TRANSITIONS_PER_STEP = 5
EXPRESS_MEMORY_GB = 64 / 1024
"""Express bills memory in 64 MB chunks; a five-state workflow with small payloads needs one."""
DURABLE_OPERATIONS_PER_STEP = 5
"""A durable function with one durable step per stage."""


@dataclass
class _Invocations:
    cpu_ms: dict[str, list[float]] = field(default_factory=dict)
    """The handler's own CPU per invocation (its AWS calls taken out), by stage."""
    wait_ms: dict[str, list[float]] = field(default_factory=dict)
    """Assumed AWS latency plus botocore's client-side work, per invocation, by stage."""
    batch_wait_ms: dict[str, list[float]] = field(default_factory=dict)
    """The part of ``wait_ms`` spent in ``PER_BATCH_CALLS``."""
    records: Counter[str] = field(default_factory=Counter)
    message_chunks: int = 0
    """Each delivered message's body in 64 KB chunks (one SendMessage by EventBridge)."""

    def modelled_ms(self, stage: str, share: float, batch: int = 1) -> list[int]:
        """Billed milliseconds per invocation, or with ``batch`` records an invocation, per record (the
        once-a-batch calls' time shared). A stage's first invocation in this cloud imports its handler
        and makes its clients (a cold start): its CPU is taken as the stage's median."""
        cpu = self.cpu_ms[stage]
        warm = statistics.median(cpu[1:]) if len(cpu) > 1 else cpu[0]
        own = [warm, *cpu[1:]]
        waits = zip(self.wait_ms[stage], self.batch_wait_ms[stage], strict=True)
        shared = [w - b + b / batch for w, b in waits]
        return [math.ceil(c * share + w) for c, w in zip(own, shared, strict=True)]


class _CallClock:
    """Times each AWS call a handler makes (CPU of this thread: in-process moto runs here too)."""

    def __init__(self) -> None:
        self.inside = 0.0
        self.latency_ms = 0.0
        self.calls = 0
        self.batch_latency_ms = 0.0
        self.batch_calls = 0
        self.stage: str | None = None

    def __call__(self, call: Call, proceed: Proceed) -> Any:
        started = time.thread_time()
        try:
            return proceed(call.params)
        finally:
            self.inside += time.thread_time() - started
            if call.service in PIPELINE_SERVICES:
                name = f"{call.service}.{call.operation}"
                latency = CALL_LATENCY_MS.get(name, CALL_LATENCY_MS[call.service])
                self.calls += 1
                self.latency_ms += latency
                if name in PER_BATCH_CALLS or (
                    name == "dynamodb.BatchGetItem" and self.stage in BATCH_READ_STAGES
                ):
                    self.batch_calls += 1
                    self.batch_latency_ms += latency


@contextmanager
def _timed_invocations(clock: _CallClock, seen: _Invocations, share: float) -> Iterator[None]:
    original = LambdaRuntime.invoke

    def invoke(self: LambdaRuntime, logical_id: str, event: Mapping[str, Any]) -> Invocation:
        clock.inside, clock.latency_ms, clock.calls = 0.0, 0.0, 0
        clock.batch_latency_ms, clock.batch_calls = 0.0, 0
        clock.stage = STAGES.get(logical_id)
        started = time.thread_time()
        invocation = original(self, logical_id, event)
        own = time.thread_time() - started - clock.inside
        stage = STAGES.get(logical_id)
        if stage is not None:
            seen.cpu_ms.setdefault(stage, []).append(own * 1000)
            waited = clock.calls * BOTOCORE_CLIENT_MS * share + clock.latency_ms
            seen.wait_ms.setdefault(stage, []).append(waited)
            batch_waited = clock.batch_calls * BOTOCORE_CLIENT_MS * share + clock.batch_latency_ms
            seen.batch_wait_ms.setdefault(stage, []).append(batch_waited)
            seen.records[stage] += len(event["Records"])
            for record in event["Records"]:
                seen.message_chunks += _chunks(len(record["body"].encode()))
        return invocation

    LambdaRuntime.invoke = invoke  # type: ignore[method-assign]
    try:
        yield
    finally:
        LambdaRuntime.invoke = original  # type: ignore[method-assign]


def _chunks(size: int) -> int:
    return max(1, math.ceil(size / CHUNK))


def _entry_size(entry: Mapping[str, Any]) -> int:
    """PutEvents entry size as EventBridge counts it."""
    size = 14 if "Time" in entry else 0
    for name in ("Source", "DetailType", "Detail"):
        size += len(str(entry.get(name, "")).encode())
    size += sum(len(resource.encode()) for resource in entry.get("Resources", []))
    return size


def _incident(cloud: LocalCloud) -> None:
    seed.seed_service(cloud.clients)
    seed.seed_metrics(cloud.clients)
    event = seed.latency_event()
    cloud.put_events([{"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)}])
    cloud.run_until_idle(max_invocations=200)
    if seed.desired_count(cloud.clients) != 4:
        raise RuntimeError("the cost benchmark's incident run did not complete")


def _raw_dynamodb(cloud: LocalCloud) -> Callable[[str, dict[str, Any]], Any]:
    client = cloud.clients.dynamodb()
    unrecorded = vars(BaseClient)["_make_api_call"]
    return lambda operation, params: unrecorded(client, operation, params)


def _log_sizes(cloud: LocalCloud) -> dict[str, int]:
    runtime = cloud._runtime  # the log files Lambda would ship to CloudWatch Logs
    assert runtime is not None
    paths = {logical_id: runtime.log_path(logical_id) for logical_id in STAGES}
    return {logical_id: path.stat().st_size if path.exists() else 0 for logical_id, path in paths.items()}


def _log_bytes(cloud: LocalCloud, since: Mapping[str, int]) -> tuple[int, int, int]:
    """What the stages logged after the offsets ``since``: (every line, the lines that come once per
    invocation — Lambda's START/END/REPORT and the metrics line —, the metrics lines alone)."""
    runtime = cloud._runtime
    assert runtime is not None
    total = per_invocation = metrics = 0
    for logical_id, offset in since.items():
        with runtime.log_path(logical_id).open("rb") as log:
            log.seek(offset)
            for line in log:
                total += len(line)
                if line.startswith(_PLATFORM_LINES):
                    per_invocation += len(line)
                elif line.startswith(b'{"_aws":'):
                    per_invocation += len(line)
                    metrics += 1
    return total, per_invocation, metrics


_PLATFORM_LINES = (b"START RequestId: ", b"END RequestId: ", b"REPORT RequestId: ")


def measure_cost() -> dict[str, object]:
    with LocalCloud(mode="inprocess") as warm:
        _incident(warm)  # imports, clients, pydantic schemas: a cold start, not a step's cost
    log, clock, seen = CallLog(), _CallClock(), _Invocations()
    with LocalCloud(mode="inprocess") as cloud:
        functions = cloud.topology.functions
        memory_mb = functions["ExecuteFunction"].memory_size
        share = max(1.0, prices.LAMBDA_MB_PER_VCPU / memory_mb)
        meter = CapacityMeter(_raw_dynamodb(cloud), cloud.topology.tables.values())
        logs_before = _log_sizes(cloud)
        with _timed_invocations(clock, seen, share), recording(log, interceptors=(clock, meter)):
            _incident(cloud)
        log_bytes, invocation_log_bytes, metrics_lines = _log_bytes(cloud, logs_before)
        stored = sum(_stored_bytes(_raw_dynamodb(cloud), name) for name in cloud.topology.tables.values())
        tables = {name: logical for logical, name in cloud.topology.tables.items()}
    steps = seen.records["record"]
    stage_names = {functions[logical].name for logical in STAGES}
    stage_of = {functions[logical].name: stage for logical, stage in STAGES.items()}
    entries = [
        entry
        for call in log.calls
        if call.function in stage_names and call.operation == "PutEvents"
        for entry in call.params["Entries"]
    ]
    usage = meter.usage
    modelled = {stage: seen.modelled_ms(stage, share) for stage in seen.cpu_ms}
    invocations = sum(len(v) for v in modelled.values())
    billed_ms = sum(sum(v) for v in modelled.values())
    gb_seconds = billed_ms / 1000 * memory_mb / 1024
    billed_ms_at_load = sum(sum(seen.modelled_ms(stage, share, LOAD_BATCH)) for stage in seen.cpu_ms)
    gb_seconds_at_load = billed_ms_at_load / 1000 * memory_mb / 1024
    put_event_chunks = sum(_chunks(_entry_size(entry)) for entry in entries)
    archived_bytes = sum(_entry_size(entry) for entry in entries)
    runs = 1
    records = sum(seen.records.values())
    # Under load: a batch's records share one invocation's lines (its metrics line a little longer).
    log_bytes_at_load = (
        log_bytes
        - invocation_log_bytes * (1 - 1 / LOAD_BATCH)
        + metrics_lines * EMF_BYTES_PER_EXTRA_RECORD * (1 - 1 / LOAD_BATCH)
    )
    per_step = {
        "dynamodb_write_units_table": usage.table_write_units / steps,
        "dynamodb_write_units_indexes": usage.index_write_units / steps,
        "dynamodb_index_writes": usage.total_index_writes / steps,
        "dynamodb_read_units": usage.total_read_units / steps,
        "dynamodb_transactional_items": usage.transactional_items / steps,
        "lambda_invocations": invocations / steps,
        "lambda_ms_modelled": billed_ms / steps,
        "lambda_ms_modelled_at_load": billed_ms_at_load / steps,
        "log_bytes": log_bytes / steps,
        "log_bytes_per_invocation_lines": invocation_log_bytes / steps,
        "log_bytes_at_load": log_bytes_at_load / steps,
        "put_events_entries": len(entries) / steps,
        "put_events_chunks": put_event_chunks / steps,
        "sqs_messages": sum(seen.records.values()) / steps,
        "traces": runs / steps,
    }
    by_service = {
        "dynamodb": (usage.table_write_units + usage.index_write_units) * prices.DYNAMODB_PER_WRITE_UNIT
        + usage.total_read_units * prices.DYNAMODB_PER_READ_UNIT,
        "lambda": invocations * prices.LAMBDA_PER_REQUEST + gb_seconds * prices.LAMBDA_ARM64_PER_GB_SECOND,
        "eventbridge": put_event_chunks * prices.EVENTBRIDGE_PER_EVENT
        + archived_bytes / 1e9 * prices.EVENTBRIDGE_ARCHIVE_PER_GB,
        "sqs": 3 * seen.message_chunks * prices.SQS_PER_REQUEST,
        "cloudwatch_logs": log_bytes / 1e9 * prices.LOGS_PER_GB_INGESTED,
        "xray": runs * prices.XRAY_PER_TRACE,
    }
    at_load = by_service | {
        "lambda": records / LOAD_BATCH * prices.LAMBDA_PER_REQUEST
        + gb_seconds_at_load * prices.LAMBDA_ARM64_PER_GB_SECOND,
        "sqs": seen.message_chunks * (1 + 2 / LOAD_BATCH) * prices.SQS_PER_REQUEST,
        "cloudwatch_logs": log_bytes_at_load / 1e9 * prices.LOGS_PER_GB_INGESTED,
        "xray": runs * LOAD_TRACE_SAMPLING * prices.XRAY_PER_TRACE,
    }
    provisioned = at_load | {
        "dynamodb": provisioned_dynamodb_usd(
            usage.table_write_units + usage.index_write_units, usage.total_read_units
        )
    }
    by_service_per_million = {name: round(v / steps * 1e6, 2) for name, v in at_load.items()}
    total = sum(at_load.values()) / steps * 1e6
    floors = {
        name: total - (at_load["dynamodb"] - dynamodb) / steps * 1e6
        for name, dynamodb in dynamodb_floors(usage).items()
    }
    total_provisioned = sum(provisioned.values()) / steps * 1e6
    one_by_one = sum(by_service.values()) / steps * 1e6
    alternatives = _alternatives(per_step, memory_mb)
    return {
        "per_million_steps_usd": round(total, 2),
        "ratio_sfn_standard": round(total / alternatives["step_functions_standard"], 3),
        "per_million_steps_usd_provisioned": round(total_provisioned, 2),
        "ratio_sfn_standard_provisioned": round(
            total_provisioned / alternatives["step_functions_standard"], 3
        ),
        "dynamodb_usd_provisioned": round(provisioned["dynamodb"] / steps * 1e6, 2),
        "floor": {
            name: {
                "per_million_steps_usd": round(value, 2),
                "ratio_sfn_standard": round(value / alternatives["step_functions_standard"], 3),
            }
            for name, value in floors.items()
        },
        "provisioned_utilisation": PROVISIONED_UTILISATION,
        "per_million_steps_usd_at_a_trickle": round(one_by_one, 2),
        "ratio_sfn_standard_at_a_trickle": round(one_by_one / alternatives["step_functions_standard"], 3),
        "by_service_usd": by_service_per_million,
        "per_step": {name: round(value, 3) for name, value in per_step.items()},
        "steps_measured": steps,
        "dynamodb_by_table": {
            _logical(where, tables): {
                "write_units": round(units / steps, 2),
                "index_writes": round(usage.index_writes.get(where, 0) / steps, 2),
            }
            for where, units in sorted(usage.write_units.items())
        },
        "dynamodb_by_call": {
            f"{stage_of.get(function, function)} {operation}": {
                kind: round(units / steps, 2) for kind, units in billed.items()
            }
            for (function, _, operation), billed in sorted(
                (call.partition(" "), billed) for call, billed in usage.by_call.items()
            )
        },
        "lambda_ms_by_stage": {stage: round(sum(ms) / len(ms), 1) for stage, ms in sorted(modelled.items())},
        "lambda_cpu_ms_by_stage": {
            stage: round(statistics.median(ms[1:] or ms), 2) for stage, ms in sorted(seen.cpu_ms.items())
        },
        "alternatives_usd": {name: round(value, 2) for name, value in alternatives.items()},
        "alternatives_limits": LIMITS,
        "idle_monthly_usd": idle.idle_monthly(ROOT / "template.yaml"),
        "storage_gb_per_million_steps": round(stored / steps * 1e6 / 1e9, 2),
        "lambda_memory_mb": memory_mb,
    }


def dynamodb_floors(usage: Usage) -> dict[str, float]:
    """On-demand DynamoDB for the same items and calls, billed as if no write were in a transaction
    (``standard_writes``), and as if also no read were strongly consistent
    (``standard_writes_eventual_reads``): what a store layout could save at most by using
    transactions or consistent reads otherwise while writing and reading the same items."""
    writes = usage.table_write_units + usage.index_write_units - usage.transactional_write_units / 2
    reads = usage.total_read_units
    return {
        "standard_writes": writes * prices.DYNAMODB_PER_WRITE_UNIT + reads * prices.DYNAMODB_PER_READ_UNIT,
        "standard_writes_eventual_reads": writes * prices.DYNAMODB_PER_WRITE_UNIT
        + (reads - usage.consistent_read_units / 2) * prices.DYNAMODB_PER_READ_UNIT,
    }


def provisioned_dynamodb_usd(write_units: float, read_units: float) -> float:
    """The same units on provisioned capacity: a unit used for one second takes a capacity unit's
    second, and auto scaling keeps ``PROVISIONED_UTILISATION`` of what it provisions in use."""
    per_write_unit = prices.DYNAMODB_PER_WCU_HOUR / 3600 / PROVISIONED_UTILISATION
    per_read_unit = prices.DYNAMODB_PER_RCU_HOUR / 3600 / PROVISIONED_UTILISATION
    return write_units * per_write_unit + read_units * per_read_unit


def _logical(where: str, tables: Mapping[str, str]) -> str:
    name, _, index = where.partition("/")
    return tables.get(name, name) + (f"/{index}" if index else "")


def _stored_bytes(raw: Callable[[str, dict[str, Any]], Any], table: str) -> int:
    """What a table holds, its indexes' copies left out (each index entry adds its own size)."""
    total, request = 0, {"TableName": table}
    while True:
        page = raw("Scan", request)
        total += sum(item_size(item) for item in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return total
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _alternatives(per_step: Mapping[str, float], memory_mb: int) -> dict[str, float]:
    """Per million steps. Standard: 5 transitions and 5 Lambda requests a step (its tasks' duration is
    left out). Express: a run's request spread over its steps, the stages' modelled time as duration at
    64 MB, plus the Lambdas' requests and duration. Durable functions: one durable operation per stage,
    the same Lambda duration and requests (a replay after a wait is an extra invocation, left out)."""
    million = 1e6
    lambda_requests = per_step["lambda_invocations"] * prices.LAMBDA_PER_REQUEST
    gb_seconds = per_step["lambda_ms_modelled"] / 1000 * memory_mb / 1024
    lambda_duration = gb_seconds * prices.LAMBDA_ARM64_PER_GB_SECOND
    # Each of its five states a task invoking one Lambda function, whatever intentbus's own count.
    standard = SFN_TRANSITIONS_PER_STEP * (prices.SFN_STANDARD_PER_TRANSITION + prices.LAMBDA_PER_REQUEST)
    express_seconds = math.ceil(per_step["lambda_ms_modelled"] / 100) / 10
    express = (
        per_step["traces"] * prices.SFN_EXPRESS_PER_REQUEST
        + express_seconds * EXPRESS_MEMORY_GB * prices.SFN_EXPRESS_PER_GB_SECOND
        + lambda_requests
        + lambda_duration
    )
    checkpoint_gb = per_step["put_events_entries"] * 2048 / 1e9  # assumption: ~2 KB checkpointed per stage
    durable = (
        DURABLE_OPERATIONS_PER_STEP * prices.DURABLE_PER_OPERATION
        + checkpoint_gb * prices.DURABLE_PER_GB_WRITTEN
        + lambda_requests
        + lambda_duration
    )
    return {
        "step_functions_standard": standard * million,
        "step_functions_express": express * million,
        "lambda_durable_functions": durable * million,
    }


LIMITS = {
    "step_functions_standard": "exactly-once transitions, a run up to a year; $25 per million transitions",
    "step_functions_express": (
        "a run ends within 5 minutes (no hour-long approval wait, no waitForTaskToken), at-least-once "
        "(asynchronous), history only in CloudWatch Logs"
    ),
    "lambda_durable_functions": (
        "a run up to a year, waits without compute; a step may run again on replay unless it checkpoints "
        "first; durable execution is enabled only when a function is created; Python and Node.js runtimes; "
        "history kept 1 to 90 days"
    ),
}


if __name__ == "__main__":
    import logging
    import warnings

    warnings.simplefilter("ignore")
    logging.getLogger("moto").setLevel(logging.ERROR)
    print(json.dumps(measure_cost(), indent=2))
