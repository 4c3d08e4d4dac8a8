"""Who may write the audit trail's log group, judged on the translated template.yaml (moto enforces no
resource policy). CloudWatch Logs authorizes EventBridge by the template's resource policy alone: the
audit rule may write, and no other rule (of this account or any other) may write through it; it is the
only grant the audit trail adds, and the pipeline bus's policy is the same with it as without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from intentbus_local.template import load_template
from tests.iam_eval import Decision, Request, evaluate
from tests.integration.test_least_privilege import SHARED_ROLES
from tests.template_policies import ACCOUNT, REGION, TemplatePolicies

EVENTS = "events.amazonaws.com"
ON = {"AuditTrail": "true"}


@pytest.fixture(scope="module")
def cloudformation() -> Mapping[str, Any]:
    return load_template().cloudformation


@pytest.fixture(scope="module")
def template(cloudformation: Mapping[str, Any]) -> TemplatePolicies:
    return TemplatePolicies(cloudformation, ON)


def stream(template: TemplatePolicies, log_group: str) -> str:
    name = template.name(log_group)
    return f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{name}:log-stream:0f1e2d3c"


def by_events(template: TemplatePolicies, action: str, resource: str, rule_arn: str | None) -> Decision:
    context = {"aws:SourceArn": rule_arn} if rule_arn else {}
    request = Request(EVENTS, action, resource, context)
    return evaluate(request, [], template.log_resource_policies())


def test_off_by_default_the_audit_trail_adds_no_resource_policy(cloudformation: Mapping[str, Any]) -> None:
    assert TemplatePolicies(cloudformation).log_resource_policies() == []


def test_the_audit_rule_writes_the_audit_log(template: TemplatePolicies) -> None:
    audit_rule, audit_log = template.arn("AuditTrailRule"), stream(template, "AuditTrailLog")
    assert by_events(template, "logs:CreateLogStream", audit_log, None) is Decision.ALLOW
    assert by_events(template, "logs:PutLogEvents", audit_log, audit_rule) is Decision.ALLOW


@pytest.mark.parametrize(
    "rule_arn",
    [
        None,
        f"arn:aws:events:{REGION}:{ACCOUNT}:rule/ValidateRule",
        f"arn:aws:events:{REGION}:210987654321:rule/intentbus-intentbus-test/AuditTrailRule",
    ],
    ids=["no-source", "another-rule-of-the-account", "a-rule-of-another-account"],
)
def test_no_other_rule_writes_the_audit_log_through_its_policy(
    template: TemplatePolicies, rule_arn: str | None
) -> None:
    """The attack: another account's rule (EventBridge as a confused deputy) or another rule of this one
    aimed at the audit log, to forge or flood the trail."""
    decision = by_events(template, "logs:PutLogEvents", stream(template, "AuditTrailLog"), rule_arn)
    assert decision is Decision.IMPLICIT_DENY


def test_the_policy_grants_eventbridge_nothing_else(template: TemplatePolicies) -> None:
    audit_rule, audit_log = template.arn("AuditTrailRule"), stream(template, "AuditTrailLog")
    other_log = stream(template, "ValidateFunctionLogs")
    for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
        assert by_events(template, action, other_log, audit_rule) is Decision.IMPLICIT_DENY
    for action in (
        "logs:DeleteLogGroup",
        "logs:PutRetentionPolicy",
        "logs:GetLogEvents",
        "logs:DeleteLogStream",
    ):
        assert by_events(template, action, audit_log, audit_rule) is Decision.IMPLICIT_DENY
    other_service = Request(
        "sns.amazonaws.com", "logs:PutLogEvents", audit_log, {"aws:SourceArn": audit_rule}
    )
    assert evaluate(other_service, [], template.log_resource_policies()) is Decision.IMPLICIT_DENY


def test_no_role_of_the_stack_may_write_or_delete_the_audit_log(template: TemplatePolicies) -> None:
    audit_log = template.arn("AuditTrailLog")
    writable = [
        f"{role}: {action}"
        for role in template.roles()
        if role not in SHARED_ROLES  # API Gateway's account role: its documented logs policy, on "*"
        for action in ("logs:PutLogEvents", "logs:DeleteLogGroup", "logs:PutRetentionPolicy")
        if evaluate(Request(template.arn(role), action, audit_log), template.identity_policies(role))
        is Decision.ALLOW
    ]
    assert not writable


def test_the_pipeline_bus_policy_is_the_same_with_the_audit_trail(
    cloudformation: Mapping[str, Any], template: TemplatePolicies
) -> None:
    """A rule target is no PutEvents: the audit trail adds no principal to the bus policy's exceptions."""
    assert template.bus_policies("EventBus") == TemplatePolicies(cloudformation).bus_policies("EventBus")
