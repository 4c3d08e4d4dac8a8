"""The tables' capacity mode as template.yaml ships it, judged on the translated template.

On demand by default (no capacity, nothing to scale). With ``TableBillingMode=PROVISIONED`` every table
and every one of its indexes gets capacity and a target-tracking policy on reads and on writes: an
index left without one would stay at its minimum and throttle every write to its table (DynamoDB
throttles a table's writes when an index cannot take its share).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.template import load_template
from tests.template_policies import TemplatePolicies

PIPELINE_TABLES = ("WorkflowTable", "IdempotencyTable")
PROVISIONED = {
    "TableBillingMode": "PROVISIONED",
    "TableMinReadCapacity": "3",
    "TableMaxReadCapacity": "900",
    "TableMinWriteCapacity": "4",
    "TableMaxWriteCapacity": "1200",
    "TableTargetUtilization": "65",
}


@pytest.fixture(scope="module")
def cloudformation() -> Mapping[str, Any]:
    return load_template().cloudformation


CAPACITY_TYPES = (
    "AWS::DynamoDB::Table",
    "AWS::ApplicationAutoScaling::ScalableTarget",
    "AWS::ApplicationAutoScaling::ScalingPolicy",
)


def deployed(cloudformation: Mapping[str, Any], parameters: Mapping[str, str]) -> dict[str, Any]:
    """Logical id -> resolved table or scaling resource a stack with these parameters creates."""
    template = TemplatePolicies(cloudformation, parameters)
    return {
        logical_id: {"Type": resource["Type"], "Properties": template.resolve(resource.get("Properties", {}))}
        for logical_id, resource in cloudformation["Resources"].items()
        if resource["Type"] in CAPACITY_TYPES
        and ("Condition" not in resource or template.condition(resource["Condition"]))
    }


def scaled_dimensions(resources: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(resource id, dimension) -> {"target": its scalable target, "policies": its policies' properties}."""
    by_logical: dict[str, tuple[str, str]] = {}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget":
            props = resource["Properties"]
            key = (props["ResourceId"], props["ScalableDimension"])
            assert key not in found, f"two scalable targets for {key}"
            by_logical[logical_id] = key
            found[key] = {"target": props, "policies": []}
    for resource in resources.values():
        if resource["Type"] == "AWS::ApplicationAutoScaling::ScalingPolicy":
            props = resource["Properties"]
            found[by_logical[props["ScalingTargetId"]]]["policies"].append(props)
    return found


def test_by_default_the_tables_are_on_demand_with_nothing_to_scale(cloudformation: Mapping[str, Any]) -> None:
    resources = deployed(cloudformation, {})
    for logical_id in (*PIPELINE_TABLES, "CrmTable"):
        table = resources[logical_id]["Properties"]
        assert table["BillingMode"] == "PAY_PER_REQUEST"
        assert "ProvisionedThroughput" not in table
        assert all("ProvisionedThroughput" not in index for index in table.get("GlobalSecondaryIndexes", []))
    assert {resource["Type"] for resource in resources.values()} == {"AWS::DynamoDB::Table"}


def test_provisioned_tables_scale_reads_and_writes_of_every_table_and_index(
    cloudformation: Mapping[str, Any],
) -> None:
    resources = deployed(cloudformation, PROVISIONED)
    scaled = scaled_dimensions(resources)
    expected: set[tuple[str, str]] = set()
    for logical_id in PIPELINE_TABLES:
        table = resources[logical_id]["Properties"]
        assert table["BillingMode"] == "PROVISIONED"
        minimum = {"ReadCapacityUnits": "3", "WriteCapacityUnits": "4"}
        assert {k: str(v) for k, v in table["ProvisionedThroughput"].items()} == minimum
        name = logical_id  # TemplatePolicies names a table by its logical id
        expected |= {(f"table/{name}", f"dynamodb:table:{io}CapacityUnits") for io in ("Read", "Write")}
        for index in table.get("GlobalSecondaryIndexes", []):
            assert {k: str(v) for k, v in index["ProvisionedThroughput"].items()} == minimum
            expected |= {
                (f"table/{name}/index/{index['IndexName']}", f"dynamodb:index:{io}CapacityUnits")
                for io in ("Read", "Write")
            }
    assert set(scaled) == expected
    for (_, dimension), scaling in scaled.items():
        io = "Read" if dimension.endswith("ReadCapacityUnits") else "Write"
        target = scaling["target"]
        assert target["ServiceNamespace"] == "dynamodb"
        assert str(target["MinCapacity"]) == PROVISIONED[f"TableMin{io}Capacity"]
        assert str(target["MaxCapacity"]) == PROVISIONED[f"TableMax{io}Capacity"]
        assert "RoleARN" not in target  # the service-linked role: no role of ours to scope
        (policy,) = scaling["policies"]
        assert policy["PolicyType"] == "TargetTrackingScaling"
        tracking = policy["TargetTrackingScalingPolicyConfiguration"]
        assert str(tracking["TargetValue"]) == "65"
        metric = tracking["PredefinedMetricSpecification"]["PredefinedMetricType"]
        assert metric == f"DynamoDB{io}CapacityUtilization"


def test_the_workflows_own_tool_table_stays_on_demand_when_the_pipeline_provisions(
    cloudformation: Mapping[str, Any],
) -> None:
    crm = deployed(cloudformation, PROVISIONED)["CrmTable"]["Properties"]
    assert crm["BillingMode"] == "PAY_PER_REQUEST"


@pytest.mark.usefixtures("fake_aws_credentials")
def test_a_provisioned_stack_deploys_on_the_local_cloud_and_runs_an_incident_to_its_end() -> None:
    """The local cloud's tables take the capacity. moto's CloudFormation skips the scaling resources
    (the translated-template tests above judge them) and neither scales nor throttles a table; the fault
    harness's injected throttles stand in for a burst above the capacity."""
    with LocalCloud(mode="inprocess", parameters={"TableBillingMode": "PROVISIONED"}) as cloud:
        dynamodb = cloud.clients.dynamodb()
        for logical_id in PIPELINE_TABLES:
            table = dynamodb.describe_table(TableName=cloud.topology.tables[logical_id])["Table"]
            assert table["BillingModeSummary"]["BillingMode"] == "PROVISIONED"
            assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 5
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        event = seed.latency_event()
        entry = {"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)}
        cloud.put_events([entry])
        cloud.run_until_idle(max_invocations=200)
        assert seed.desired_count(cloud.clients) == 4  # the incident's recovery ran, once
