"""What a deployment of the template costs per month before it runs a single step.

Read from template.yaml with its default parameters (a resource under a condition that is off by
default is left out): CloudWatch alarms (billed per metric each evaluates), dashboards, KMS keys,
the scheduled functions' invocations, the SQS mappings' empty long polls, and the expiry sweep's
custom metrics and index queries. ``total`` is their sum, before any free tier.

``provisioned_minimum_capacity`` (not in ``total``): what the minimum capacity of each table and index
costs per month with ``TableBillingMode=PROVISIONED`` and the template's default minimums, billed
whether any step runs or not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from intentbus.adapters.key_shards import DUE_APPROVAL_SHARDS
from intentbus_local.template import read_sam
from tests.bench import prices

SECONDS_PER_MONTH = 30 * 86400
SCHEDULED_SECONDS_PER_INVOCATION = 0.1
"""Assumption: an idle sweep (nothing due) runs about 100 ms."""
IDLE_POLLS_PER_MAPPING = 5
"""Assumption: Lambda keeps about five 20-second long polls open per SQS mapping on an idle queue."""
LONG_POLL_SECONDS = 20
SWEEP_METRICS = 3
"""The expiry sweep's custom metrics (approvals_expired, approvals_pending, approval_oldest_age),
published every minute whether anything waits or not."""
EXPIRY_SWEEP = "ExpireApprovalsFunction"
SWEEP_QUERIES = DUE_APPROVAL_SHARDS + 1
"""Index queries per sweep: one per shard of gsi2 and one of its key from before the shards."""
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours)\)")


def idle_monthly(template: Path) -> dict[str, float]:
    sam = read_sam(template)
    resources = _default_resources(sam["Resources"])
    memory = int(sam.get("Globals", {}).get("Function", {}).get("MemorySize", 128))
    typed = list(resources.values())
    alarms = sum(_alarm_metrics(r["Properties"]) for r in typed if r["Type"] == "AWS::CloudWatch::Alarm")
    dashboards = sum(1 for r in typed if r["Type"] == "AWS::CloudWatch::Dashboard")
    keys = sum(1 for r in typed if r["Type"] == "AWS::KMS::Key")
    schedules, sweeps, mappings = 0.0, 0.0, 0
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] == "Schedule":
                schedules += _per_month(event["Properties"]["Schedule"])
                if logical_id == EXPIRY_SWEEP:
                    sweeps += _per_month(event["Properties"]["Schedule"])
            elif event["Type"] == "SQS":
                mappings += 1
    per_invocation = prices.LAMBDA_PER_REQUEST + (
        SCHEDULED_SECONDS_PER_INVOCATION * memory / 1024 * prices.LAMBDA_ARM64_PER_GB_SECOND
    )
    polls = mappings * IDLE_POLLS_PER_MAPPING * SECONDS_PER_MONTH / LONG_POLL_SECONDS
    figures = {
        "alarms": alarms * prices.CLOUDWATCH_PER_ALARM_METRIC_MONTH,
        "dashboards": dashboards * prices.CLOUDWATCH_PER_DASHBOARD_MONTH,
        "kms_keys": keys * prices.KMS_PER_KEY_MONTH,
        "scheduled_functions": schedules * per_invocation,
        "idle_sqs_polls": polls * prices.SQS_PER_REQUEST,
        "sweep_custom_metrics": SWEEP_METRICS * prices.CLOUDWATCH_PER_CUSTOM_METRIC_MONTH,
        "sweep_index_queries": sweeps * SWEEP_QUERIES * 0.5 * prices.DYNAMODB_PER_READ_UNIT,
    }
    figures["total"] = sum(figures.values())
    figures["provisioned_minimum_capacity"] = _minimum_capacity_monthly(sam)
    return {name: round(value, 2) for name, value in figures.items()} | {
        "alarm_metrics": alarms,
        "scheduled_invocations": schedules,
        "sqs_mappings": mappings,
    }


def _minimum_capacity_monthly(sam: Mapping[str, Any]) -> float:
    """The scalable targets' minimum capacity (their parameters' defaults), per capacity-unit hour."""
    defaults = {name: spec.get("Default") for name, spec in sam.get("Parameters", {}).items()}
    hours = SECONDS_PER_MONTH / 3600
    total = 0.0
    for resource in sam["Resources"].values():
        if resource["Type"] != "AWS::ApplicationAutoScaling::ScalableTarget":
            continue
        properties = resource["Properties"]
        if properties["ServiceNamespace"] != "dynamodb":
            continue
        minimum = properties["MinCapacity"]
        units = float(defaults[minimum["Ref"]] if isinstance(minimum, Mapping) else minimum)
        writes = str(properties["ScalableDimension"]).endswith("WriteCapacityUnits")
        total += units * hours * (prices.DYNAMODB_PER_WCU_HOUR if writes else prices.DYNAMODB_PER_RCU_HOUR)
    return total


def _default_resources(resources: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The resources a deployment with the default parameters creates: conditional ones are off by
    default in this template (audit trail, repair path, an OTel collector layer)."""
    return {name: resource for name, resource in resources.items() if "Condition" not in resource}


def _alarm_metrics(properties: Mapping[str, Any]) -> int:
    metrics = properties.get("Metrics")
    if metrics is None:
        return 1
    return sum(1 for metric in metrics if "MetricStat" in metric)


def _per_month(schedule: str) -> float:
    match = _RATE.fullmatch(schedule)
    if match is None:
        raise ValueError(f"cannot price the schedule {schedule!r}")
    seconds = int(match.group(1)) * (60 if match.group(2).startswith("minute") else 3600)
    return SECONDS_PER_MONTH / seconds
