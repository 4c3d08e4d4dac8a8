"""Least privilege that still works: every call a handler made is allowed by its role in template.yaml.

moto does not enforce IAM, so this runs both seed workflows (and a quarantined input) on the local
cloud, records each function's calls at botocore, and checks them against the translated template:
actions and resources for every call, and every PutEvents entry through tests/iam_eval.py as well
(its role's ``events:source`` condition and the pipeline bus's policy).
"""

from __future__ import annotations

import fnmatch
import json
import logging
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from intentbus_local import seed
from intentbus_local.api_events import rest_request, scheduled_event
from intentbus_local.cloud import LocalCloud
from tests.botocore_calls import Call, CallLog, recording
from tests.call_requests import decide, logical_names, requests_of
from tests.iam_eval import Decision
from tests.template_policies import TemplatePolicies

SEED = json.loads((Path(__file__).parents[2] / "infra" / "events" / "seed_tool_call.json").read_text())
TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "ConditionCheck": "ConditionCheckItem",
    "Delete": "DeleteItem",
}


@pytest.fixture(scope="module")
def exercised() -> Iterator[tuple[LocalCloud, CallLog]]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    # The lowest claim-check threshold: most facts travel by claim check, so the S3 calls are checked too.
    with LocalCloud(mode="inprocess", parameters={"ClaimCheckThresholdBytes": "1024"}) as cloud:
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        event = seed.latency_event()
        malformed = {"type": "ServiceLatencyIncreased", "payload": {}}
        with recording(CallLog()) as log:
            cloud.put_events(
                [
                    {
                        "Source": "monitoring.example",
                        "DetailType": event["type"],
                        "Detail": json.dumps(event),
                    },
                    {
                        "Source": "crm.example",
                        "DetailType": "TOOL_EXECUTION_REQUESTED",
                        "Detail": json.dumps(SEED),
                    },
                    {
                        "Source": "monitoring.example",
                        "DetailType": "ServiceLatencyIncreased",
                        "Detail": json.dumps(malformed),
                    },
                ]
            )
            cloud.run_until_idle(max_invocations=200)
            for scheduled in ("ExpireApprovalsFunction", "SweepDeadLettersFunction"):
                cloud.invoke(
                    scheduled,
                    scheduled_event(
                        "arn:aws:events:us-east-1:123456789012:rule/sweep",
                        now=cloud.clock.now(),
                        region="us-east-1",
                        account_id=cloud.topology.account_id,
                    ),
                )
            claims = {
                "sub": "ann",
                "email": "ann@example.com",
                "custom:tenant_id": "acme",
                "cognito:groups": "approvers",
            }
            for listed in ("approvals", "reviews"):
                listing = rest_request(
                    method="GET",
                    path=f"/tenants/acme/{listed}",
                    resource=f"/tenants/{{tenant}}/{listed}",
                    path_parameters={"tenant": "acme"},
                    stage="v1",
                    now=cloud.clock.now(),
                    claims=claims,
                )
                assert cloud.invoke("ApprovalsFunction", listing).response["statusCode"] == 200
        assert seed.desired_count(cloud.clients) == 4
        assert any(call.service == "s3" and call.operation == "PutObject" for call in log.calls)
        assert any(call.service == "s3" and call.operation == "GetObject" for call in log.calls)
        yield cloud, log


def actions_of(call: Call) -> list[str]:
    prefix = {"monitoring": "cloudwatch"}.get(call.service, call.service)
    if call.operation == "TransactWriteItems":
        return [
            f"dynamodb:{TRANSACT_ACTIONS[kind]}" for item in call.params["TransactItems"] for kind in item
        ]
    return [f"{prefix}:{call.operation}"]


def resources_of(call: Call, names: dict[str, str]) -> list[str]:
    """The logical ids a call touches, as far as the template can name them."""
    touched: set[str] = set()
    text = json.dumps(call.params, default=str)
    for physical, logical in names.items():
        if physical and physical in text:
            touched.add(logical)
    return sorted(touched)


def _action_on(call: Call, names: dict[str, str], touched: list[str | None]) -> list[tuple[str, str | None]]:
    """Each action with the resource it acts on: a transaction's per item, others on all they name."""
    if call.operation != "TransactWriteItems":
        return [(action, logical) for action in actions_of(call) for logical in touched]
    return [
        (f"dynamodb:{TRANSACT_ACTIONS[kind]}", names.get(str(body.get("TableName"))))
        for item in call.params["TransactItems"]
        for kind, body in item.items()
    ]


def statements(template: Mapping[str, Any], function: str) -> list[dict[str, Any]]:
    role = template["Resources"][f"{function}Role"]["Properties"]
    found: list[dict[str, Any]] = []
    for policy in role.get("Policies", []):
        found.extend(policy["PolicyDocument"]["Statement"])
    return found


def allows(statement: dict[str, Any], action: str, logical: str | None, via_index: bool) -> bool:
    if statement.get("Effect") != "Allow":
        return False
    actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
    if not any(fnmatch.fnmatchcase(action, pattern) for pattern in actions):
        return False
    resource = statement.get("Resource")
    if resource == "*" or logical is None:
        return True
    text = json.dumps(resource)
    return logical in text and (not via_index or "/index/" in text)


def denied_calls(cloud: LocalCloud, log: CallLog) -> list[str]:
    """Each action a function's call took that its role's statements do not allow, on what it touched."""
    template = cloud.template.cloudformation
    names = {name: logical for logical, name in cloud.topology.tables.items()}
    names |= {queue.url: logical for logical, queue in cloud.topology.queues.items()}
    names[cloud.topology.bus_name] = "EventBus"
    function_of = {info.name: logical for logical, info in cloud.topology.functions.items()}
    denied: set[str] = set()
    for call in log.calls:
        function = function_of[call.function]
        touched: list[str | None] = [*resources_of(call, names)] or [None]
        for action, logical in _action_on(call, names, touched):
            if not any(
                allows(s, action, logical, "IndexName" in call.params) for s in statements(template, function)
            ):
                denied.add(f"{function}: {action} on {logical or '*'}")
    return sorted(denied)


def test_every_call_a_handler_made_is_allowed_by_its_role(exercised: tuple[LocalCloud, CallLog]) -> None:
    cloud, log = exercised
    denied = denied_calls(cloud, log)
    assert not denied, "\n".join(denied)
    function_of = {info.name: logical for logical, info in cloud.topology.functions.items()}
    assert {function_of[call.function] for call in log.calls} == set(cloud.topology.functions)


def test_every_put_events_entry_passes_its_role_condition_and_the_bus_policy(
    exercised: tuple[LocalCloud, CallLog],
) -> None:
    cloud, log = exercised
    template = TemplatePolicies(cloud.template.cloudformation)
    logical = logical_names(cloud.topology)
    function_of = {info.name: lid for lid, info in cloud.topology.functions.items()}
    refused: list[str] = []
    puts = [c for c in log.calls if (c.service, c.operation) == ("events", "PutEvents")]
    for call in puts:
        role = f"{function_of[call.function]}Role"
        identity = template.identity_policies(role)
        for request in requests_of(call, template.arn(role), template, logical):
            decision = decide(request, identity, template)
            if decision is not Decision.ALLOW:
                refused.append(
                    f"{role}: PutEvents {dict(request.context)} on {request.resource}: {decision.value}"
                )
    assert not refused, "\n".join(refused)
    assert {function_of[c.function] for c in puts} >= {
        "ValidateFunction",
        "ExecuteFunction",
        "RecordFunction",
    }
