"""What template.yaml's deploy-time settings guarantee, judged on the translated template.

Stage concurrency: every SQS mapping is capped (ScalingConfig.MaximumConcurrency, at least 2, Lambda's
minimum), and when a stack reserves concurrency each stage reserves at least what its mapping may use,
so Lambda never throttles its own mapping; by default nothing is reserved, so a low-quota account still
deploys. The alarm topic's key lets CloudWatch publish (checkov sees the key, not its policy), and the
approvals API writes access logs to the stack's log group, after the region's CloudWatch role is set.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from typing import Any

import pytest

from intentbus_local.template import load_template
from tests.template_policies import TemplatePolicies

STAGE_FUNCTIONS = tuple(f"{s}Function" for s in ("Validate", "Decide", "Authorize", "Execute", "Record"))
LAMBDA_MINIMUM_MAXIMUM_CONCURRENCY = 2


@pytest.fixture(scope="module")
def cloudformation() -> Mapping[str, Any]:
    return load_template().cloudformation


def of_type(cloudformation: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return {lid: r for lid, r in cloudformation["Resources"].items() if r["Type"] == kind}


def mappings(template: TemplatePolicies, cloudformation: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Function logical id -> its SQS mapping's properties, resolved (a broker's mapping is not one)."""
    found: dict[str, dict[str, Any]] = {}
    for resource in of_type(cloudformation, "AWS::Lambda::EventSourceMapping").values():
        if {"Topics", "Queues"} & set(resource["Properties"]):
            continue
        props = template.resolve(resource["Properties"])
        found[resource["Properties"]["FunctionName"]["Ref"]] = props
    return found


def reserved(template: TemplatePolicies, cloudformation: Mapping[str, Any], function: str) -> int | None:
    props = template.resolve(cloudformation["Resources"][function]["Properties"])
    value = props.get("ReservedConcurrentExecutions")
    return None if value is None else int(value)


# ---------------------------------------------------------------------- concurrency


@pytest.mark.parametrize("maximum", ["2", "10", "1000"])
@pytest.mark.parametrize("reserve", ["false", "true"])
def test_a_stage_reserves_at_least_what_its_mapping_may_use_or_nothing(
    cloudformation: Mapping[str, Any], reserve: str, maximum: str
) -> None:
    parameters = {"ReserveStageConcurrency": reserve, "StageMaximumConcurrency": maximum}
    template = TemplatePolicies(cloudformation, parameters)
    every = mappings(template, cloudformation)
    found = {function: props for function, props in every.items() if function != "RepairFunction"}
    assert set(found) == set(STAGE_FUNCTIONS)
    # The repair function (RepairQuarantined on) is capped on its own: it asks a model, not a stage's work.
    assert int(every["RepairFunction"]["ScalingConfig"]["MaximumConcurrency"]) == 2
    assert reserved(template, cloudformation, "RepairFunction") is None
    for function, props in found.items():
        cap = int(props["ScalingConfig"]["MaximumConcurrency"])
        assert cap == int(maximum)
        held = reserved(template, cloudformation, function)
        if reserve == "true":
            assert held is not None, function
            assert held >= cap, function
        else:
            assert held is None, function


def test_by_default_nothing_is_reserved_and_every_mapping_is_capped(
    cloudformation: Mapping[str, Any],
) -> None:
    template = TemplatePolicies(cloudformation)
    for function in of_type(cloudformation, "AWS::Lambda::Function"):
        assert reserved(template, cloudformation, function) is None, function
    for props in mappings(template, cloudformation).values():
        assert int(props["ScalingConfig"]["MaximumConcurrency"]) >= LAMBDA_MINIMUM_MAXIMUM_CONCURRENCY
    parameter = cloudformation["Parameters"]["StageMaximumConcurrency"]
    assert parameter["MinValue"] >= LAMBDA_MINIMUM_MAXIMUM_CONCURRENCY


# ---------------------------------------------------------------------- the alarm topic's key


def test_the_alarm_topic_is_encrypted_with_a_key_cloudwatch_may_use(
    cloudformation: Mapping[str, Any],
) -> None:
    template = TemplatePolicies(cloudformation)
    topic = cloudformation["Resources"]["AlarmTopic"]["Properties"]
    key_id = topic["KmsMasterKeyId"]["Ref"]
    key = template.resolve(cloudformation["Resources"][key_id]["Properties"])
    assert key["EnableKeyRotation"] is True
    granted = {
        action
        for statement in key["KeyPolicy"]["Statement"]
        if statement["Effect"] == "Allow"
        and statement["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
        and "Condition" not in statement
        for action in ("kms:Decrypt", "kms:GenerateDataKey")
        if any(fnmatch.fnmatchcase(action, pattern) for pattern in _strings(statement["Action"]))
    }
    assert granted == {"kms:Decrypt", "kms:GenerateDataKey"}
    administrators = [s for s in key["KeyPolicy"]["Statement"] if s["Action"] == "kms:*"]
    assert [s["Principal"] for s in administrators] == [
        {"AWS": f"arn:aws:iam::{template.ref('AWS::AccountId')}:root"}
    ]


# ---------------------------------------------------------------------- the approvals API's access logs


def test_the_approvals_api_logs_every_request_to_the_stack_s_log_group(
    cloudformation: Mapping[str, Any],
) -> None:
    template = TemplatePolicies(cloudformation)
    (stage,) = of_type(cloudformation, "AWS::ApiGateway::Stage").values()
    setting = template.resolve(stage["Properties"]["AccessLogSetting"])
    assert setting["DestinationArn"] + ":*" == template.arn("ApprovalsApiAccessLogs")
    fields = json.loads(setting["Format"])
    assert {"requestId", "caller", "user", "sub", "httpMethod", "resourcePath", "status"} <= set(fields)


@pytest.mark.parametrize(("create", "waits_for"), [("true", "ApiGatewayAccount"), ("false", "")])
def test_the_access_log_group_waits_for_the_account_role_this_stack_sets(
    cloudformation: Mapping[str, Any], create: str, waits_for: str
) -> None:
    template = TemplatePolicies(cloudformation, {"CreateApiGatewayAccountRole": create})
    metadata = template.resolve(cloudformation["Resources"]["ApprovalsApiAccessLogs"]["Metadata"])
    assert metadata["AfterAccountSettings"] == waits_for
    for logical_id in ("ApiGatewayAccount", "ApiGatewayCloudWatchRole"):
        assert template.condition(cloudformation["Resources"][logical_id]["Condition"]) is (create == "true")
    assert cloudformation["Resources"]["ApiGatewayCloudWatchRole"]["DeletionPolicy"] == "Retain"


def _strings(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)
