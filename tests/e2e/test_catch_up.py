"""A subscriber that was down catches up from the pipeline bus's archive, and nothing else runs again.

The audit trail (AuditTrail "true") is the subscriber: its rule is disabled (the subscriber down), incidents
run, the rule is enabled again, and the replay the README shows (the audit rule's ARN as the only
FilterArns entry, the time it was down as the window) brings it every fact it missed, once. Facts carry
their envelope's time (virtual on the local cloud), so the clock steps past each edge of the window.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from tests.botocore_calls import CallLog, recording

EDGE_SECONDS = 10.0
"""Virtual time stepped over at each edge of the outage: a fact's time has whole seconds only."""
STAGES = ("Validate", "Decide", "Authorize", "Execute", "Record")
STAGE_QUEUES = tuple(f"{stage}Queue" for stage in STAGES)


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[LocalCloud]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    with LocalCloud(mode="server", logs_dir=tmp_path / "logs", parameters={"AuditTrail": "true"}) as running:
        seed.seed_service(running.clients)
        seed.seed_metrics(running.clients)
        yield running


def incident(cloud: LocalCloud, event_id: str) -> None:
    event = seed.latency_event(event_id=event_id)
    cloud.put_events([{"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)}])
    assert cloud.run_until_idle(max_invocations=100).idle


def audit_log(cloud: LocalCloud) -> list[dict[str, Any]]:
    """Every event the audit log holds, as EventBridge wrote it."""
    pages = cloud.clients("logs").get_paginator("filter_log_events")
    group = cloud.topology.outputs["AuditTrailLogGroupName"]
    return [json.loads(e["message"]) for page in pages.paginate(logGroupName=group) for e in page["events"]]


def archived(cloud: LocalCloud) -> int:
    name = cloud.topology.outputs["PipelineArchiveArn"].rsplit("/", 1)[1]
    return int(cloud.clients.events().describe_archive(ArchiveName=name)["EventCount"])


def rule_name(arn: str) -> str:
    return arn.rsplit("/", 1)[1]


def replay(cloud: LocalCloud, name: str, start: float, end: float, rules: list[str] | None) -> None:
    """``aws events start-replay`` as the README shows it; ``rules`` None replays to every rule."""
    events = cloud.clients.events()
    destination: dict[str, Any] = {"Arn": cloud.topology.bus_arn}
    if rules is not None:
        destination["FilterArns"] = rules
    events.start_replay(
        ReplayName=name,
        EventSourceArn=cloud.topology.outputs["PipelineArchiveArn"],
        EventStartTime=datetime.fromtimestamp(start, UTC),
        EventEndTime=datetime.fromtimestamp(end, UTC),
        Destination=destination,  # type: ignore[arg-type]
    )
    assert events.describe_replay(ReplayName=name)["State"] == "COMPLETED"


def nothing_reaches_the_stages(cloud: LocalCloud) -> None:
    assert [cloud.queue_depth(q) for q in STAGE_QUEUES] == [(0, 0, 0)] * len(STAGE_QUEUES)
    invoked = cloud.run_until_idle().invocations  # the expiry sweep may run: its minute may have come
    assert [invoked[f"{stage}Function"] for stage in STAGES] == [0] * len(STAGES)


def test_a_replay_to_the_audit_rule_delivers_what_it_missed_once_and_runs_nothing_again(
    cloud: LocalCloud,
) -> None:
    events, audit_rule = cloud.clients.events(), cloud.topology.outputs["AuditTrailRuleArn"]
    incident(cloud, "evt-before-the-outage")
    live_before = len(audit_log(cloud))

    cloud.clock.advance(EDGE_SECONDS)
    down_from = cloud.clock.now()
    events.disable_rule(Name=rule_name(audit_rule), EventBusName=cloud.topology.bus_name)
    incident(cloud, "evt-during-the-outage-1")
    incident(cloud, "evt-during-the-outage-2")
    assert len(audit_log(cloud)) == live_before, "a disabled rule delivers nothing"
    down_until = cloud.clock.now()
    events.enable_rule(Name=rule_name(audit_rule), EventBusName=cloud.topology.bus_name)
    cloud.clock.advance(EDGE_SECONDS)
    incident(cloud, "evt-after-the-outage")
    live = audit_log(cloud)
    total = archived(cloud)
    missed = total - len(live)
    assert live_before > 0
    assert len(live) > live_before
    assert missed > 0

    with recording(CallLog()) as calls:
        replay(cloud, "audit-catch-up", down_from, down_until, [audit_rule])
        nothing_reaches_the_stages(cloud)

    assert calls.count("ecs", "UpdateService") == 0, "no tool ran again"
    after = audit_log(cloud)
    replayed = [e for e in after if e.get("replay-name") == "audit-catch-up"]
    assert len(replayed) == missed
    ids = Counter(e["detail"]["id"] for e in after)
    assert len(ids) == total, "every archived fact is in the audit log"
    assert set(ids.values()) == {1}, "each once"
    assert {e["detail"]["run_id"] for e in replayed}.isdisjoint(e["detail"]["run_id"] for e in live)


def test_a_replay_aimed_at_the_stages_or_at_every_rule_reaches_no_stage(cloud: LocalCloud) -> None:
    """The mistake the README warns of: the stages' idempotency records expire, so a replay into them
    would run work again. Their rules refuse replayed events (``replay-name`` must not exist)."""
    start = cloud.clock.now() - EDGE_SECONDS
    incident(cloud, "evt-once-only")
    end = cloud.clock.now() + EDGE_SECONDS
    pipeline_rules = [
        rule["Arn"]
        for rule in cloud.clients.events().list_rules(EventBusName=cloud.topology.bus_name)["Rules"]
        if "ManagedBy" not in rule and rule["Arn"] != cloud.topology.outputs["AuditTrailRuleArn"]
    ]
    assert len(pipeline_rules) == len(STAGE_QUEUES)

    with recording(CallLog()) as calls:
        replay(cloud, "aimed-at-the-stages", start, end, pipeline_rules)
        nothing_reaches_the_stages(cloud)
        replay(cloud, "to-every-rule", start, end, None)
        nothing_reaches_the_stages(cloud)

    assert calls.count("ecs", "UpdateService") == 0
    replayed = Counter(e.get("replay-name") for e in audit_log(cloud))
    assert replayed["aimed-at-the-stages"] == 0
    assert replayed["to-every-rule"] == archived(cloud), "every rule means the audit rule too"
