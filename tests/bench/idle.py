"""What a deployment of the template costs per month before it runs a single step.

Read from template.yaml with its default parameters (a resource under a condition that is off by
default is left out): CloudWatch alarms (billed per metric each evaluates), dashboards, KMS keys,
the scheduled functions' invocations, and the SQS mappings' empty long polls.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from intentbus_local.template import read_sam
from tests.bench import prices

SECONDS_PER_MONTH = 30 * 86400
SCHEDULED_SECONDS_PER_INVOCATION = 0.1
"""Assumption: an idle sweep (nothing due) runs about 100 ms."""
IDLE_POLLS_PER_MAPPING = 5
"""Assumption: Lambda keeps about five 20-second long polls open per SQS mapping on an idle queue."""
LONG_POLL_SECONDS = 20
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours)\)")


def idle_monthly(template: Path) -> dict[str, float]:
    resources = _default_resources(read_sam(template)["Resources"])
    memory = int(read_sam(template).get("Globals", {}).get("Function", {}).get("MemorySize", 128))
    alarms = sum(_alarm_metrics(r["Properties"]) for r in resources if r["Type"] == "AWS::CloudWatch::Alarm")
    dashboards = sum(1 for r in resources if r["Type"] == "AWS::CloudWatch::Dashboard")
    keys = sum(1 for r in resources if r["Type"] == "AWS::KMS::Key")
    schedules, mappings = 0.0, 0
    for resource in resources:
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] == "Schedule":
                schedules += _per_month(event["Properties"]["Schedule"])
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
    }
    return {name: round(value, 2) for name, value in figures.items()} | {
        "alarm_metrics": alarms,
        "scheduled_invocations": schedules,
        "sqs_mappings": mappings,
    }


def _default_resources(resources: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The resources a deployment with the default parameters creates: conditional ones are off by
    default in this template (audit trail, repair path, an OTel collector layer)."""
    return [resource for resource in resources.values() if "Condition" not in resource]


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
