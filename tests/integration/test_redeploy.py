"""Redeploying a running local cloud: new parameters or a changed template through moto's UpdateStack.

The stage functions run the recorder fixture, which journals each record with its function's
environment and the sandbox (import) it ran in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import moto
import pytest

from intentbus_local import LocalCloud, moto_fixes
from intentbus_local.redeploy import RedeployError
from intentbus_local.template import read_sam
from tests.integration.test_local_cloud import FUNCTIONS, RECORDER, REPO, Journal, entry, own_rules, put

SEED_WORKFLOWS = "intentbus.workflows.incident,intentbus.workflows.direct_tool"


@pytest.fixture
def cloud(tmp_path: Path, journal: Journal) -> Iterator[LocalCloud]:
    with LocalCloud(
        code_dirs=dict.fromkeys(FUNCTIONS, RECORDER), logs_dir=tmp_path / "logs", stack_name="ib-redeploy"
    ) as running:
        yield running


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Journal:
    path = tmp_path / "journal.jsonl"
    monkeypatch.setenv("FIXTURE_JOURNAL", str(path))
    return Journal(path)


def template_with(tmp_path: Path, change: dict[str, Any]) -> Path:
    """template.yaml with resources added or replaced (``None`` removes one), written as JSON (which the
    YAML reader takes as it is), every CodeUri made absolute so it resolves from the copy's folder."""
    sam = read_sam(REPO / "template.yaml")
    resources = sam["Resources"]
    for resource in resources.values():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::Serverless::Function" and "CodeUri" in properties:
            properties["CodeUri"] = str(REPO / properties["CodeUri"])
    for logical_id, resource in change.items():
        resources[logical_id] = resource
    path = tmp_path / "changed-template.json"
    path.write_text(json.dumps(sam), encoding="utf-8")
    return path


def get_att(logical_id: str, attribute: str) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def audit_resources() -> dict[str, Any]:
    """A queue, a rule on the pipeline bus into it, and a function its SQS event maps to it."""
    return {
        "AuditQueue": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 60}},
        "AuditRule": {
            "Type": "AWS::Events::Rule",
            "Properties": {
                "EventBusName": get_att("EventBus", "Name"),
                "EventPattern": {"source": ["intentbus.pipeline"], "detail-type": ["WorkflowCompleted"]},
                "Targets": [{"Id": "AuditQueue", "Arn": get_att("AuditQueue", "Arn")}],
            },
        },
        "AuditFunction": {
            "Type": "AWS::Serverless::Function",
            "Properties": {
                "CodeUri": str(RECORDER),
                "Handler": "app.lambda_handler",
                "Events": {
                    "Queue": {
                        "Type": "SQS",
                        "Properties": {
                            "Queue": get_att("AuditQueue", "Arn"),
                            "BatchSize": 5,
                            "FunctionResponseTypes": ["ReportBatchItemFailures"],
                        },
                    }
                },
            },
        },
    }


def test_moto_still_resolves_a_layer_ref_to_no_arn_without_the_fix() -> None:
    moto_fixes.apply()
    assert moto_fixes.layer_ref_fixed_here(), (
        f"moto {moto.__version__} gives LayerVersion a physical id of its own (found on "
        f"{moto_fixes.FOUND_ON}): drop moto_fixes and its call in redeploy.py"
    )


def test_new_parameters_reach_every_function_which_starts_cold_and_tables_and_queues_keep_their_data(
    cloud: LocalCloud, journal: Journal
) -> None:
    before = cloud.topology
    dynamodb = cloud.clients.dynamodb()
    table = before.tables["WorkflowTable"]
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "T#acme#WF#kept"}, "sk": {"S": "STATE"}})
    put(cloud, [entry("EventAccepted")])
    cloud.run_until_idle(deadline_seconds=30)
    (warm,) = journal.entries()
    put(cloud, [entry("CommandAuthorized")])
    cloud.run_until_idle(deadline_seconds=30, hold=("ExecuteFunction",))  # one message waits across it

    after = cloud.redeploy(parameters={"Workflows": "intentbus.workflows.direct_tool", "LogLevel": "DEBUG"})

    assert cloud.topology is after
    for function in after.functions.values():
        assert function.environment["INTENTBUS_WORKFLOWS"] == "intentbus.workflows.direct_tool"
        assert function.environment["POWERTOOLS_LOG_LEVEL"] == "DEBUG"
        assert function.environment["INTENTBUS_ENVIRONMENT"] == "dev", "the others keep their values"
    assert (after.queues, after.tables, after.bus_name) == (before.queues, before.tables, before.bus_name)
    assert [m.queue for m in after.mappings] == [m.queue for m in before.mappings]
    kept = dynamodb.get_item(TableName=table, Key={"pk": {"S": "T#acme#WF#kept"}, "sk": {"S": "STATE"}})
    assert "Item" in kept
    assert cloud.queue_depth("ExecuteQueue") == (1, 0, 0)

    put(cloud, [entry("EventAccepted")])
    summary = cloud.run_until_idle(deadline_seconds=30)

    assert summary.idle
    executed, decided = sorted(journal.entries()[1:], key=lambda e: e["detail_type"])
    assert executed["function"] == after.functions["ExecuteFunction"].name
    assert decided["function"] == after.functions["DecideFunction"].name
    for seen in (decided, executed):
        assert seen["env"]["INTENTBUS_WORKFLOWS"] == "intentbus.workflows.direct_tool"
    assert warm["env"]["INTENTBUS_WORKFLOWS"] == SEED_WORKFLOWS
    assert decided["sandbox"] != warm["sandbox"], "a redeployed function starts cold"
    mappings = cloud.clients.lambda_().list_event_source_mappings()["EventSourceMappings"]
    assert {m["State"] for m in mappings} == {"Disabled"}, "moto must never run a mapping itself"


def test_queues_rules_and_mappings_follow_a_changed_template_there_and_back(
    cloud: LocalCloud, journal: Journal, tmp_path: Path
) -> None:
    original = cloud.template.path
    validate_queue = read_sam(original)["Resources"]["ValidateQueue"]
    validate_queue["Properties"]["VisibilityTimeout"] = 90
    validate_queue["Properties"]["RedrivePolicy"]["maxReceiveCount"] = 3
    changed = template_with(tmp_path, {**audit_resources(), "ValidateQueue": validate_queue})
    events = cloud.clients.events()

    grown = cloud.redeploy(template=changed)

    (audit,) = grown.functions["AuditFunction"].mappings
    assert (audit.queue.logical_id, audit.batch_size, audit.visibility_timeout) == ("AuditQueue", 5, 60)
    (validate,) = grown.functions["ValidateFunction"].mappings
    assert (validate.visibility_timeout, validate.max_receive_count) == (90, 3)
    assert validate.dlq == cloud.topology.dlqs["ValidateQueue"]
    assert len(own_rules(events, grown.bus_name)) == 6
    put(cloud, [entry("WorkflowCompleted")])
    cloud.run_until_idle(deadline_seconds=30)
    assert [e["function"] for e in journal.entries()] == [grown.functions["AuditFunction"].name]

    shrunk = cloud.redeploy(template=original)

    assert "AuditFunction" not in shrunk.functions
    assert "AuditQueue" not in shrunk.queues
    sqs = cloud.clients.sqs()
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName=grown.queues["AuditQueue"].name)
    assert len(own_rules(events, shrunk.bus_name)) == 5
    (validate,) = shrunk.functions["ValidateFunction"].mappings
    assert (validate.visibility_timeout, validate.max_receive_count) == (180, 5)
    assert len(cloud.clients.lambda_().list_event_source_mappings()["EventSourceMappings"]) == 5
    put(cloud, [entry("WorkflowCompleted")])
    assert cloud.run_until_idle(deadline_seconds=30).idle
    assert len(journal.entries()) == 1, "nothing consumes the event any more"


def test_a_change_moto_cannot_make_in_place_is_refused_before_anything_changes(
    cloud: LocalCloud, journal: Journal, tmp_path: Path
) -> None:
    table = read_sam(cloud.template.path)["Resources"]["WorkflowTable"]
    table["Properties"]["AttributeDefinitions"].append({"AttributeName": "gsi3pk", "AttributeType": "S"})
    table["Properties"]["GlobalSecondaryIndexes"].append(
        {
            "IndexName": "gsi3",
            "KeySchema": [{"AttributeName": "gsi3pk", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }
    )
    changed = template_with(tmp_path, {"WorkflowTable": table})
    before = cloud.topology

    with pytest.raises(RedeployError, match=r"WorkflowTable \(AWS::DynamoDB::Table\)"):
        cloud.redeploy(template=changed, parameters={"LogLevel": "DEBUG"})

    assert cloud.topology is before
    stack = cloud.clients.cloudformation().describe_stacks(StackName="ib-redeploy")["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    function = cloud.clients.lambda_().get_function_configuration(
        FunctionName=before.functions["DecideFunction"].name
    )
    assert function["Environment"]["Variables"]["POWERTOOLS_LOG_LEVEL"] == "INFO"
    put(cloud, [entry("EventAccepted")])
    assert cloud.run_until_idle(deadline_seconds=30).idle
    assert [e["detail_type"] for e in journal.entries()] == ["EventAccepted"]
