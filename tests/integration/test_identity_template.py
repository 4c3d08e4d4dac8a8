"""The template's identity settings, read from template.yaml itself: who may exist, sign in and decide."""

from __future__ import annotations

from typing import Any

import pytest

from intentbus.api_identity import APPROVERS_GROUP, TENANT_CLAIM
from intentbus_cli.users import POOL_LOGICAL_ID
from intentbus_local.template import load_template
from tests.iam_eval import Decision, Request, evaluate
from tests.template_policies import ACCOUNT, TemplatePolicies


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    return dict(load_template().sam["Resources"])


def properties(resources: dict[str, Any], logical_id: str) -> dict[str, Any]:
    return dict(resources[logical_id]["Properties"])


def test_nobody_signs_up_and_the_tenant_cannot_be_written(resources: dict[str, Any]) -> None:
    pool = properties(resources, POOL_LOGICAL_ID)
    assert pool["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": True}
    assert pool["UserAttributeUpdateSettings"] == {"AttributesRequireVerificationBeforeUpdate": ["email"]}
    assert pool["MfaConfiguration"] == {"Ref": "ApproverMfa"}
    (tenant,) = [attribute for attribute in pool["Schema"] if attribute["Name"] == "tenant_id"]
    assert tenant["Mutable"] is False
    client = properties(resources, "ApprovalsUserPoolClient")
    assert TENANT_CLAIM not in client["WriteAttributes"]
    assert TENANT_CLAIM in client["ReadAttributes"]


def test_the_console_can_sign_in_with_the_code_flow(resources: dict[str, Any]) -> None:
    client = properties(resources, "ApprovalsUserPoolClient")
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["GenerateSecret"] is False
    assert all(url["Fn::Sub"].endswith("/v1/console") for url in client["CallbackURLs"])
    assert "ApprovalsUserPoolDomain" in resources
    variables = properties(resources, "ApprovalsApi")["Variables"]
    assert set(variables) == {"signInDomain", "consoleClientId"}  # what console_page.SignIn reads


def test_approvers_are_one_group_and_the_api_is_throttled(resources: dict[str, Any]) -> None:
    assert properties(resources, "ApproversGroup")["GroupName"] == APPROVERS_GROUP
    (throttle,) = properties(resources, "ApprovalsApi")["MethodSettings"]
    assert throttle["ThrottlingRateLimit"] == {"Ref": "ApiRateLimit"}
    assert throttle["ThrottlingBurstLimit"] == {"Ref": "ApiBurstLimit"}


def test_programs_are_fenced_by_their_tenant_tag(resources: dict[str, Any]) -> None:
    (statement,) = properties(resources, "ProgramApproverPolicy")["PolicyDocument"]["Statement"]
    assert statement["Action"] == "execute-api:Invoke"
    assert statement["Resource"]["Fn::Sub"].endswith(
        "/v1/*/programs/tenants/${!aws:PrincipalTag/intentbus-tenant}/*"
    )
    assert statement["Condition"] == {"Null": {"aws:PrincipalTag/intentbus-tenant": "false"}}


def test_approval_ids_are_salted_by_the_stack(resources: dict[str, Any]) -> None:
    template = load_template().sam
    assert template["Globals"]["Function"]["Environment"]["Variables"]["INTENTBUS_ID_SALT"] == {
        "Ref": "AWS::StackId"
    }


def test_a_tagged_program_may_call_its_own_tenants_routes_only() -> None:
    """Attack: a program tagged for acme approves globex's approval, or an untagged one any."""
    template = TemplatePolicies(load_template().cloudformation)
    policy = template.resolve(
        properties(dict(load_template().cloudformation["Resources"]), "ProgramApproverPolicy")
    )
    document = policy["PolicyDocument"]
    api = template.ref("ApprovalsApi")
    role = f"arn:aws:iam::{ACCOUNT}:role/release-bot"

    def invoke(path: str, tags: dict[str, str]) -> Decision:
        resource = f"arn:aws:execute-api:us-east-1:{ACCOUNT}:{api}/v1/POST{path}"
        return evaluate(Request(role, "execute-api:Invoke", resource, tags), [document])

    acme = {"aws:PrincipalTag/intentbus-tenant": "acme"}
    assert invoke("/programs/tenants/acme/approvals/a1/approve", acme) is Decision.ALLOW
    assert invoke("/programs/tenants/acme/reviews/run-1/resume", acme) is Decision.ALLOW
    assert invoke("/programs/tenants/globex/approvals/a1/approve", acme) is Decision.IMPLICIT_DENY
    assert invoke("/tenants/acme/approvals/a1/approve", acme) is Decision.IMPLICIT_DENY
    assert invoke("/programs/tenants/acme/approvals/a1/approve", {}) is Decision.IMPLICIT_DENY
