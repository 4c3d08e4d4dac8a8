"""Least privilege, judged on the translated template.yaml: what no role may hold.

tests/integration/test_template_iam.py shows each role allows every call its function made; these show
what is left over is nothing wide. A policy names ``Resource: "*"`` only for actions IAM offers no
resource-level permissions for; each role may consume (receive, delete, hide) only the queue its own
SQS mapping polls, never another stage's queue or any DLQ; and only the stages may send, only to the
quarantine queue.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from intentbus_local.template import LocalTemplate, load_template
from tests.iam_eval import Decision, Policy, Request, evaluate, statements
from tests.template_policies import TemplatePolicies

UNSCOPABLE = frozenset(
    {
        # X-Ray's trace uploads and sampling reads name no resource type.
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "xray:GetSamplingRules",
        "xray:GetSamplingTargets",
        # CloudWatch metric reads (the incident workflow's tools) name no resource type.
        "cloudwatch:GetMetricData",
        "cloudwatch:GetMetricStatistics",
        "cloudwatch:ListMetrics",
        # What a broker mapping (Kafka, Amazon MQ) looks up to place its network interfaces.
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSubnets",
        "ec2:DescribeVpcs",
    }
)
"""The only actions a policy may grant on ``Resource: "*"``: IAM's Service Authorization Reference lists
no resource type for them, so "*" is the only resource they take."""

SHARED_ROLES = {
    "ApiGatewayCloudWatchRole": "service-role/AmazonAPIGatewayPushToCloudWatchLogs",
}
"""Roles that serve more than this stack, with the one AWS managed policy each holds: API Gateway's
account role writes the logs of every REST API in the account and region, to log groups it creates per
API, so it takes the policy API Gateway documents (logs on "*") and nothing else."""

CONSUME = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:PurgeQueue")
MAPPING_NEEDS = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:ChangeMessageVisibility",
)
"""What Lambda's SQS mapping calls with the function's role; without one the mapping fails to create."""

STAGE_FUNCTIONS = tuple(f"{s}Function" for s in ("Validate", "Decide", "Authorize", "Execute", "Record"))
_WHOLE_SERVICE = re.compile(r"^arn:[^:]+:[^:]+:[^:]*:[^:]*:\*$")
"""An ARN whose resource part is just ``*``: every resource of the service, "*" in all but name."""


@pytest.fixture(scope="module")
def local() -> LocalTemplate:
    return load_template()


@pytest.fixture(scope="module")
def template(local: LocalTemplate) -> TemplatePolicies:
    return TemplatePolicies(local.cloudformation)


def identity_policies(
    template: TemplatePolicies, cloudformation: Mapping[str, Any]
) -> Iterator[tuple[str, Policy]]:
    """(where, policy) for every role's policies and every managed policy the template declares."""
    for role in template.roles():
        if role in SHARED_ROLES:
            continue
        for policy in template.identity_policies(role):
            yield role, policy
    for logical_id, resource in cloudformation["Resources"].items():
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            yield logical_id, template.resolve(resource["Properties"]["PolicyDocument"])


def strings(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def own_queues(local: LocalTemplate) -> dict[str, set[str]]:
    """Role logical id -> the queues its function's SQS events read (from the SAM template)."""
    owned: dict[str, set[str]] = {}
    for function, spec in local.functions.items():
        role = local.sam["Resources"][function]["Properties"].get("Role", {}).get("Fn::GetAtt")
        assert role is not None, f"{function} has no Role of its own: SAM would generate one"
        role_id = role[0] if isinstance(role, list) else str(role).split(".", 1)[0]
        owned.setdefault(role_id, set()).update(e.queue_logical_id for e in spec.sqs_events)
    return owned


def queues(cloudformation: Mapping[str, Any]) -> list[str]:
    return [lid for lid, r in cloudformation["Resources"].items() if r["Type"] == "AWS::SQS::Queue"]


def allowed(template: TemplatePolicies, role: str, action: str, resource: str) -> bool:
    request = Request(template.arn(role), action, resource)
    return evaluate(request, template.identity_policies(role)) is Decision.ALLOW


# ---------------------------------------------------------------------- Resource "*"


def test_resource_star_only_for_actions_without_resource_level_permissions(
    template: TemplatePolicies, local: LocalTemplate
) -> None:
    wide: list[str] = []
    for where, policy in identity_policies(template, local.cloudformation):
        for statement in statements(policy):
            if statement["Effect"] != "Allow":
                continue
            assert not {"NotResource", "NotAction"} & set(statement), (where, statement)
            if not any(r == "*" or _WHOLE_SERVICE.match(r) for r in strings(statement["Resource"])):
                continue
            wide += [f"{where}: {a} on *" for a in strings(statement["Action"]) if a not in UNSCOPABLE]
    assert not wide, "\n".join(wide)


def test_a_shared_role_holds_its_documented_managed_policy_and_nothing_else(local: LocalTemplate) -> None:
    for role, policy in SHARED_ROLES.items():
        props = local.cloudformation["Resources"][role]["Properties"]
        assert "Policies" not in props
        assert props["ManagedPolicyArns"] == [
            {"Fn::Sub": f"arn:${{AWS::Partition}}:iam::aws:policy/{policy}"}
        ]


def test_no_policy_grants_an_action_wildcard(template: TemplatePolicies, local: LocalTemplate) -> None:
    wildcards = [
        f"{where}: {action}"
        for where, policy in identity_policies(template, local.cloudformation)
        for statement in statements(policy)
        if statement["Effect"] == "Allow"
        for action in strings(statement["Action"])
        if "*" in action or "?" in action
    ]
    assert not wildcards, "\n".join(wildcards)


def test_the_star_check_sees_a_wide_statement() -> None:
    assert _WHOLE_SERVICE.match("arn:aws:sqs:us-east-1:123456789012:*")
    assert not _WHOLE_SERVICE.match("arn:aws:sqs:us-east-1:123456789012:ValidateQueue")
    assert not _WHOLE_SERVICE.match("arn:aws:bedrock:*::foundation-model/*")


# ---------------------------------------------------------------------- queues


def test_every_function_has_a_role_of_its_own(local: LocalTemplate) -> None:
    roles = [local.sam["Resources"][f]["Properties"].get("Role") for f in local.functions]
    assert None not in roles
    assert len({str(role) for role in roles}) == len(roles)
    assert set(own_queues(local)) == {f"{f}Role" for f in local.functions}


@pytest.mark.parametrize("function", [*STAGE_FUNCTIONS, "ApprovalsFunction", "ExpireApprovalsFunction"])
def test_a_role_consumes_only_the_queue_its_mapping_polls(
    template: TemplatePolicies, local: LocalTemplate, function: str
) -> None:
    role = f"{function}Role"
    owned = own_queues(local)[role]
    assert len(owned) == (1 if function in STAGE_FUNCTIONS else 0)
    for queue in queues(local.cloudformation):
        arn = template.arn(queue)
        if queue in owned:
            missing = [a for a in MAPPING_NEEDS if not allowed(template, role, a, arn)]
            assert not missing, f"{role} cannot {missing} on its own {queue}"
        else:
            extra = [a for a in CONSUME if allowed(template, role, a, arn)]
            assert not extra, f"{role} may {extra} on {queue}, which is not its own"


def test_the_dead_letter_sweep_only_reads_the_run_stages_dlqs(
    template: TemplatePolicies, local: LocalTemplate
) -> None:
    role = "SweepDeadLettersFunctionRole"
    readable = {"DecideDLQ", "AuthorizeDLQ", "ExecuteDLQ", "RecordDLQ"}
    for queue in queues(local.cloudformation):
        arn = template.arn(queue)
        assert allowed(template, role, "sqs:ReceiveMessage", arn) == (queue in readable), queue
        others = [a for a in (*CONSUME, "sqs:SendMessage") if a != "sqs:ReceiveMessage"]
        assert not [a for a in others if allowed(template, role, a, arn)], queue


def test_no_other_role_consumes_any_queue(template: TemplatePolicies, local: LocalTemplate) -> None:
    others = set(template.roles()) - set(own_queues(local))
    assert "OperatorRole" in others
    for role in others:
        for queue in queues(local.cloudformation):
            assert not any(allowed(template, role, a, template.arn(queue)) for a in CONSUME), (role, queue)


BROKER_SENDS = {
    "KafkaIngressFunctionRole": {"QuarantineQueue", "BrokerFailureQueue"},
    "RabbitMqIngressFunctionRole": {"QuarantineQueue"},
}
"""The broker ingress quarantines as validate does; the Kafka mapping's on-failure destination is its own."""


def test_only_the_stages_send_and_only_to_the_quarantine(
    template: TemplatePolicies, local: LocalTemplate
) -> None:
    sends = {
        role: {
            q
            for q in queues(local.cloudformation)
            if allowed(template, role, "sqs:SendMessage", template.arn(q))
        }
        for role in template.roles()
    }
    assert sends == {
        role: ({"QuarantineQueue"} if role[: -len("Role")] in STAGE_FUNCTIONS else set())
        | BROKER_SENDS.get(role, set())
        for role in sends
    }


# ---------------------------------------------------------------------- the claim-check bucket

CLAIM_WRITERS = {
    "ApprovalsFunction",
    "ExpireApprovalsFunction",
    "SweepDeadLettersFunction",
    "Operator",
    "KafkaIngressFunction",
    "RabbitMqIngressFunction",
}
"""What publishes facts but never reads one from the bus (the CLI's desks as OperatorRole too, the broker
ingress, which reads its input from a broker): they may write a payload, not read one."""


def test_only_the_stages_read_claim_checked_payloads_and_only_publishers_write_them(
    template: TemplatePolicies,
) -> None:
    objects = f"{template.arn('ClaimCheckBucket')}/acme/0123abcd"
    elsewhere = "arn:aws:s3:::another-bucket/acme/0123abcd"
    for role in template.roles():
        function = role.removesuffix("Role")
        may_read = function in STAGE_FUNCTIONS
        may_write = may_read or function in CLAIM_WRITERS
        assert allowed(template, role, "s3:GetObject", objects) is may_read, role
        assert allowed(template, role, "s3:PutObject", objects) is may_write, role
        assert allowed(template, role, "s3:ListBucket", template.arn("ClaimCheckBucket")) is may_read, role
        for action in ("s3:DeleteObject", "s3:PutBucketPolicy", "s3:PutObjectAcl"):
            assert not allowed(template, role, action, objects), (role, action)
        assert not allowed(template, role, "s3:GetObject", elsewhere), role
        assert not allowed(template, role, "s3:PutObject", elsewhere), role
