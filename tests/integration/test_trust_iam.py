"""Who may put what where, judged on the translated template.yaml by a small IAM evaluator.

moto enforces no IAM, so tests/iam_eval.py evaluates the template's own policies (identity policies of
each role, the pipeline bus's resource policy) the way AWS does for principals of the stack's account:
a producer with the policy ``intentbus producer policy`` prints may put only its own source, only on
the ingress bus; nobody but the pipeline's roles may put on the pipeline bus, whatever their own
policy says; each pipeline role only with its own sources; and the operator's role can make every
call the CLI's desks make (recorded while they run against the local cloud).
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from intentbus.facts import PIPELINE_SOURCE, WORKFLOW_SOURCE
from intentbus_cli.main import main
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.template import load_template
from tests import pingpong_workflow
from tests.botocore_calls import CallLog, recording
from tests.call_requests import decide, logical_names, requests_of
from tests.iam_eval import Decision, Policy, Request, evaluate
from tests.template_policies import ACCOUNT, TemplatePolicies

ALLOW, EXPLICIT_DENY, IMPLICIT_DENY = Decision.ALLOW, Decision.EXPLICIT_DENY, Decision.IMPLICIT_DENY
PRODUCER = f"arn:aws:iam::{ACCOUNT}:role/monitoring-producer"
SOURCE = "monitoring.example"
STAGE_ROLES = tuple(
    f"{stage}FunctionRole" for stage in ("Validate", "Decide", "Authorize", "Execute", "Record")
)
PIPELINE_ROLES = (
    *STAGE_ROLES,
    "ApprovalsFunctionRole",
    "ExpireApprovalsFunctionRole",
    "SweepDeadLettersFunctionRole",
    "OperatorRole",
)
OWN_SOURCES = dict.fromkeys(PIPELINE_ROLES, frozenset({PIPELINE_SOURCE})) | {
    "RecordFunctionRole": frozenset({PIPELINE_SOURCE, WORKFLOW_SOURCE})
}
INGRESS_PUTTERS = frozenset({"ApprovalsFunctionRole"})
"""Pipeline roles that also put on the ingress, as a producer: a person's resubmission of a parked input."""
SEED_WORKFLOWS = "intentbus.workflows.incident,intentbus.workflows.direct_tool"
RELAY = f"{pingpong_workflow.MODULE}:relay"
DESK = "operator-desk"
"""What the recorder files the desks' calls under (it records calls made while this names a function)."""


@pytest.fixture(scope="module")
def template() -> TemplatePolicies:
    return TemplatePolicies(load_template().cloudformation)


def put_events(
    template: TemplatePolicies, principal: str, identity: list[Policy], bus: str, source: str
) -> Decision:
    request = Request(principal, "events:PutEvents", template.arn(bus), {"events:source": source})
    return evaluate(request, identity, template.bus_policies(bus))


def role_arn(template: TemplatePolicies, role: str) -> str:
    return template.arn(role)


# ---------------------------------------------------------------------- the evaluator itself


def _doc(*statements: dict[str, Any]) -> Policy:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def test_the_evaluator_follows_iam_s_rules() -> None:
    put = Request(
        PRODUCER, "events:PutEvents", "arn:aws:events:us-east-1:1:event-bus/b", {"events:source": "s"}
    )
    allow = {"Effect": "Allow", "Action": "events:Put*", "Resource": "arn:aws:events:*:*:event-bus/*"}
    assert evaluate(put, []) is IMPLICIT_DENY
    assert evaluate(put, [_doc(allow)]) is ALLOW
    assert evaluate(put, [_doc({**allow, "Action": "EVENTS:putevents"})]) is ALLOW  # actions ignore case
    assert evaluate(put, [_doc({**allow, "Resource": "arn:aws:events:*:*:event-bus/c"})]) is IMPLICIT_DENY
    deny = {"Effect": "Deny", "Action": "*", "Resource": "*"}
    assert evaluate(put, [_doc(allow, deny)]) is EXPLICIT_DENY
    assert evaluate(put, [_doc(allow)], [_doc({**deny, "Principal": "*"})]) is EXPLICIT_DENY
    # conditions: a negated operator holds when the key is absent; ArnLike matches part by part
    assert (
        evaluate(put, [_doc({**allow, "Condition": {"StringEquals": {"events:source": ["x", "s"]}}})])
        is ALLOW
    )
    absent = {"Condition": {"StringNotEquals": {"events:detail-type": "x"}}}
    assert evaluate(put, [_doc({**allow, **absent})]) is ALLOW
    like = {"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/monitoring-*"}}
    assert evaluate(put, [_doc({**allow, "Condition": like})]) is ALLOW
    unlike = {"ArnNotLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/monitoring-*"}}
    assert evaluate(put, [_doc(allow)], [_doc({**deny, "Principal": "*", "Condition": unlike})]) is ALLOW
    # a resource policy grants by itself only to the principal it names, not to the account
    grant = {"Effect": "Allow", "Action": "events:PutEvents", "Resource": "*"}
    assert evaluate(put, [], [_doc({**grant, "Principal": {"AWS": PRODUCER}})]) is ALLOW
    assert (
        evaluate(put, [], [_doc({**grant, "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}})])
        is IMPLICIT_DENY
    )
    with pytest.raises(ValueError, match="not supported"):
        evaluate(put, [_doc({**allow, "Condition": {"StringEqualsIfExists": {"events:source": "s"}}})])


# ---------------------------------------------------------------------- producers


def test_the_printed_producer_policy_puts_only_its_own_source_and_only_on_the_ingress(
    template: TemplatePolicies, capsys: pytest.CaptureFixture[str]
) -> None:
    arn = template.arn("IngressBus")
    argv = ["producer", "policy", "--source", SOURCE, "--tenant", "acme", "--tenant", "globex"]
    assert main([*argv, "--ingress-bus-arn", arn]) == 0
    printed = capsys.readouterr()
    policy = json.loads(printed.out)
    assert printed.err.splitlines()[0].endswith(f": {SOURCE}=acme|globex")

    assert put_events(template, PRODUCER, [policy], "IngressBus", SOURCE) is ALLOW
    for other in (PIPELINE_SOURCE, WORKFLOW_SOURCE, "crm.example", "monitoring.example.evil"):
        assert put_events(template, PRODUCER, [policy], "IngressBus", other) is IMPLICIT_DENY, other
    # The pipeline bus: not in its policy, and refused by the bus's Deny whatever its policy says.
    for source in (SOURCE, PIPELINE_SOURCE):
        assert put_events(template, PRODUCER, [policy], "EventBus", source) is EXPLICIT_DENY, source
    decide = Request(PRODUCER, "events:PutRule", arn)
    assert evaluate(decide, [policy]) is IMPLICIT_DENY


@pytest.mark.parametrize(
    "identity",
    [
        {"Effect": "Allow", "Action": "events:PutEvents", "Resource": "*"},
        {"Effect": "Allow", "Action": "*", "Resource": "*"},
    ],
    ids=["events:PutEvents on *", "administrator"],
)
def test_no_identity_policy_gets_a_principal_past_the_pipeline_bus_policy(
    template: TemplatePolicies, identity: dict[str, Any]
) -> None:
    policies: list[Policy] = [{"Version": "2012-10-17", "Statement": [identity]}]
    for source in (PIPELINE_SOURCE, WORKFLOW_SOURCE, SOURCE):
        assert put_events(template, PRODUCER, policies, "EventBus", source) is EXPLICIT_DENY, source
    # The ingress has no resource policy: such a principal may put there (and validate sorts it out).
    assert put_events(template, PRODUCER, policies, "IngressBus", PIPELINE_SOURCE) is ALLOW


# ---------------------------------------------------------------------- the pipeline's roles


@pytest.mark.parametrize("role", PIPELINE_ROLES)
def test_each_pipeline_role_puts_on_the_pipeline_bus_only_with_its_own_sources(
    template: TemplatePolicies, role: str
) -> None:
    identity = template.identity_policies(role)
    principal = role_arn(template, role)
    for source in (PIPELINE_SOURCE, WORKFLOW_SOURCE, SOURCE):
        expected = ALLOW if source in OWN_SOURCES[role] else IMPLICIT_DENY
        assert put_events(template, principal, identity, "EventBus", source) is expected, source
        producer = role in INGRESS_PUTTERS and source not in (PIPELINE_SOURCE, WORKFLOW_SOURCE)
        on_ingress = ALLOW if producer else IMPLICIT_DENY
        assert put_events(template, principal, identity, "IngressBus", source) is on_ingress, source


def test_the_repair_role_puts_only_producer_sources_and_only_on_the_ingress(
    template: TemplatePolicies,
) -> None:
    """It resubmits repaired inputs as their producers sent them: validate checks them again, binding
    included. It can never put a pipeline fact: not on the ingress (its condition), not on the pipeline
    bus (the bus's Deny, and nothing in its own policy)."""
    role = "RepairFunctionRole"
    identity = template.identity_policies(role)
    principal = role_arn(template, role)
    for source in (SOURCE, "crm.example"):
        assert put_events(template, principal, identity, "IngressBus", source) is ALLOW, source
    for source in (PIPELINE_SOURCE, WORKFLOW_SOURCE):
        assert put_events(template, principal, identity, "IngressBus", source) is IMPLICIT_DENY, source
    for source in (PIPELINE_SOURCE, WORKFLOW_SOURCE, SOURCE):
        assert put_events(template, principal, identity, "EventBus", source) is EXPLICIT_DENY, source


def test_the_bus_policy_excepts_exactly_the_roles_that_may_put_on_the_pipeline_bus(
    template: TemplatePolicies,
) -> None:
    """No pipeline publisher locked out (its role missing from the Deny's exceptions), none let in
    without a policy of its own: the exceptions are the roles whose own policy allows PutEvents there."""
    publishers = {
        role
        for role in template.roles()
        if put_events(
            template, role_arn(template, role), template.identity_policies(role), "EventBus", PIPELINE_SOURCE
        )
        is ALLOW
    }
    assert publishers == set(PIPELINE_ROLES)
    (policy,) = template.bus_policies("EventBus")
    (statement,) = policy["Statement"]
    excepted = statement["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    assert sorted(excepted) == sorted(role_arn(template, role) for role in PIPELINE_ROLES)


def test_the_operator_role_is_assumable_in_the_account_and_holds_the_operator_policy(
    template: TemplatePolicies,
) -> None:
    props = template.resolve(load_template().cloudformation["Resources"]["OperatorRole"]["Properties"])
    (trust,) = props["AssumeRolePolicyDocument"]["Statement"]
    assert (trust["Principal"], trust["Action"]) == (
        {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
        "sts:AssumeRole",
    )
    assert props["ManagedPolicyArns"] == [template.ref("OperatorPolicy")]


# ---------------------------------------------------------------------- the operator's desks


@contextmanager
def as_the_desk(log: CallLog) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch, recording(log):
        patch.setenv("AWS_LAMBDA_FUNCTION_NAME", DESK)
        yield


def desk(cloud: LocalCloud, command: str, workflows: str, tenant: str, *args: str) -> int:
    table, bus = cloud.topology.tables["WorkflowTable"], cloud.topology.bus_name
    where = ["--table", table, "--bus", bus, "--workflows", workflows, "--environment", "production"]
    return main([command, *where, "--tenant", tenant, *args])


def relay(cloud: LocalCloud, run_id: str) -> None:
    envelope: dict[str, Any] = {"id": f"evt-{run_id}", "tenant_id": "acme", "run_id": run_id}
    envelope |= {"type": "RelayStarted", "payload": {"leg": 0}}
    entry = {"Source": "tests.example", "DetailType": "RelayStarted", "Detail": json.dumps(envelope)}
    cloud.put_events([entry])


@pytest.fixture(scope="module")
def desk_calls() -> Iterator[tuple[LocalCloud, CallLog]]:
    """An incident waiting for approval and two relays paused for review, each decided at a desk."""
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    parameters = {"Environment": "production", "Workflows": f"{SEED_WORKFLOWS},{RELAY}"}
    with LocalCloud(mode="inprocess", parameters=parameters) as cloud, pytest.MonkeyPatch.context() as env:
        for name, value in cloud.clients.handler_environment().items():
            env.setenv(name, value)
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        event = seed.latency_event(environment="production")
        cloud.put_events([{"Source": SOURCE, "DetailType": event["type"], "Detail": json.dumps(event)}])
        relay(cloud, "run-relay-resumed")
        relay(cloud, "run-relay-cancelled")
        cloud.run_until_idle(max_invocations=300)
        tenant = str(event["tenant_id"])
        log = CallLog()
        with as_the_desk(log):
            assert desk(cloud, "approvals", SEED_WORKFLOWS, tenant, "list") == 0
        (approval,) = _pending(cloud, tenant)
        with as_the_desk(log):
            assert desk(cloud, "approvals", SEED_WORKFLOWS, tenant, "show", approval) == 0
            assert desk(cloud, "approvals", SEED_WORKFLOWS, tenant, "approve", approval) == 0
            assert desk(cloud, "review", RELAY, "acme", "list") == 0
            resume = ["resume", "run-relay-resumed", "--max-steps", "2", "--reason", "let it finish"]
            assert desk(cloud, "review", RELAY, "acme", *resume) == 0
            assert (
                desk(cloud, "review", RELAY, "acme", "cancel", "run-relay-cancelled", "--reason", "no") == 0
            )
        yield cloud, log


def _pending(cloud: LocalCloud, tenant: str) -> list[str]:
    from intentbus.adapters.dynamodb_store import DynamoWorkflowStore

    store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
    return [approval.approval_id for approval in store.pending_approvals(tenant)]


def test_the_operator_policy_allows_every_call_the_desks_made(
    desk_calls: tuple[LocalCloud, CallLog], template: TemplatePolicies
) -> None:
    cloud, log = desk_calls
    logical = logical_names(cloud.topology)
    principal = role_arn(template, "OperatorRole")
    identity = template.identity_policies("OperatorRole")
    calls = [c for c in log.by_function(DESK) if c.service != "sts"]  # GetCallerIdentity needs no permission
    refused = [
        f"{request.action} on {request.resource} {dict(request.context)}: {decision.value}"
        for call in calls
        for request in requests_of(call, principal, template, logical)
        if (decision := decide(request, identity, template)) is not ALLOW
    ]
    assert not refused, "\n".join(refused)
    made = {(c.service, c.operation) for c in calls}
    assert {("dynamodb", "TransactWriteItems"), ("dynamodb", "Query"), ("events", "PutEvents")} <= made
    assert {c.params["Entries"][0]["Source"] for c in calls if c.operation == "PutEvents"} == {
        PIPELINE_SOURCE
    }


def test_the_operator_policy_grants_nothing_on_other_resources(template: TemplatePolicies) -> None:
    identity = template.identity_policies("OperatorRole")
    principal = role_arn(template, "OperatorRole")
    for action, resource in (
        ("dynamodb:GetItem", template.arn("IdempotencyTable")),
        ("dynamodb:PutItem", template.arn("CrmTable")),
        ("dynamodb:DeleteItem", template.arn("WorkflowTable")),
        ("dynamodb:UpdateItem", template.arn("WorkflowTable")),
        ("dynamodb:Scan", template.arn("WorkflowTable")),
        ("ecs:UpdateService", f"arn:aws:ecs:us-east-1:{ACCOUNT}:service/shop/checkout-api"),
    ):
        assert evaluate(Request(principal, action, resource), identity) is IMPLICIT_DENY, action
