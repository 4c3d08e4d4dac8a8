"""Least privilege for the repair path: every call the repair function and the repair desk made is
allowed by their roles in template.yaml (RepairQuarantined on), and no more than that.

Recorded on the local cloud (moto enforces no IAM) with the model a botocore Stubber: one input the model
repairs, one it answers with garbage and a person then resubmits through the approvals API. Checked: the
actions and resources of every call; every PutEvents entry through tests/iam_eval.py (the roles'
``events:source`` conditions and the pipeline bus's policy); and the repair role's
``dynamodb:LeadingKeys`` condition against the key of every item it read or wrote.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from intentbus_local.api_events import rest_request
from intentbus_local.cloud import LocalCloud
from tests.botocore_calls import Call, CallLog, recording
from tests.call_requests import decide, logical_names, requests_of
from tests.iam_eval import Decision
from tests.integration.test_template_iam import actions_of, allows, resources_of, statements
from tests.stubbed_bedrock import MODEL
from tests.template_policies import TemplatePolicies

FIXTURE = Path(__file__).parents[1] / "e2e" / "fixture_functions" / "repair_stubbed"
FUNCTIONS = ("RepairFunction", "ApprovalsFunction")
PARAMETERS = {
    "RepairQuarantined": "on",
    "BedrockModelId": "anthropic.claude-3-5-haiku-20241022-v1:0",
}


def broken(customer: str) -> dict[str, Any]:
    return {
        "id": customer,
        "type": "TOOL_EXECUTION_REQUESTED",
        "source": "crm.example",
        "tenant_id": "acme",
        "payload": {"tool_name": "crm_record_upsert", "parameters": {"customer_id": customer, "status": "x"}},
    }


def fixed(customer: str) -> dict[str, Any]:
    event = broken(customer)
    event["payload"]["parameters"]["status"] = "lead"
    return event


def as_people(cloud: LocalCloud, method: str, path: str, resource: str, body: Any = None) -> dict[str, Any]:
    parameters = dict(zip(("tenant", "park_id"), path.split("/")[2::2], strict=False))
    request = rest_request(
        method=method,
        path=path,
        resource=resource,
        path_parameters=parameters,
        stage="v1",
        now=cloud.clock.now(),
        claims={"sub": "ann", "custom:tenant_id": "acme", "cognito:groups": "approvers"},
        body=None if body is None else json.dumps(body),
    )
    answer: dict[str, Any] = cloud.invoke("ApprovalsFunction", request).response
    return answer


@pytest.fixture(scope="module")
def exercised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCloud, CallLog]]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    MODEL.reset()
    with LocalCloud(
        mode="inprocess",
        parameters=PARAMETERS,
        code_dirs={"RepairFunction": FIXTURE},
        logs_dir=tmp_path_factory.mktemp("logs"),
    ) as cloud:
        MODEL.answer_with_repair(fixed("cust-iam-1"))
        MODEL.answer_with([{"text": "no idea"}], stop="end_turn")
        with recording(CallLog()) as log:
            for customer in ("cust-iam-1", "cust-iam-2"):
                event = broken(customer)
                cloud.put_events(
                    [{"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)}]
                )
                cloud.run_until_idle(max_invocations=60)
            listing = as_people(cloud, "GET", "/tenants/acme/repairs", "/tenants/{tenant}/repairs")
            (parked,) = json.loads(listing["body"])["repairs"]
            answer = as_people(
                cloud,
                "POST",
                f"/tenants/acme/repairs/{parked['park_id']}/resubmit",
                "/tenants/{tenant}/repairs/{park_id}/resubmit",
                {"payload": fixed("cust-iam-2")["payload"]},
            )
            assert answer["statusCode"] == 200, answer["body"]
            cloud.run_until_idle(max_invocations=60)
        MODEL.stubber.assert_no_pending_responses()
        yield cloud, log


def calls_of(cloud: LocalCloud, log: CallLog, function: str) -> list[Call]:
    name = cloud.topology.functions[function].name
    return [call for call in log.calls if call.function == name]


def iam_actions(call: Call) -> list[str]:
    if (call.service, call.operation) == ("bedrock-runtime", "Converse"):
        return ["bedrock:InvokeModel"]  # Converse is authorized as InvokeModel
    return actions_of(call)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_call_is_allowed_by_the_functions_role(
    exercised: tuple[LocalCloud, CallLog], function: str
) -> None:
    cloud, log = exercised
    template = cloud.template.cloudformation
    names = {name: logical for logical, name in cloud.topology.tables.items()}
    names |= {queue.url: logical for logical, queue in cloud.topology.queues.items()}
    names |= {cloud.topology.bus_name: "EventBus", cloud.topology.ingress_bus_name: "IngressBus"}
    calls = calls_of(cloud, log, function)
    assert calls
    nothing_named: list[str | None] = [None]
    denied = {
        f"{function}: {action} on {logical or '*'}"
        for call in calls
        for action in iam_actions(call)
        for logical in ([*resources_of(call, names)] or nothing_named)
        if not any(
            allows(s, action, logical, "IndexName" in call.params) for s in statements(template, function)
        )
    }
    assert not denied, "\n".join(sorted(denied))


def test_the_repair_function_asked_the_model_and_touched_only_its_own_items(
    exercised: tuple[LocalCloud, CallLog],
) -> None:
    cloud, log = exercised
    calls = calls_of(cloud, log, "RepairFunction")
    assert {(c.service, c.operation) for c in calls} == {
        ("bedrock-runtime", "Converse"),
        ("dynamodb", "GetItem"),
        ("dynamodb", "PutItem"),
        ("dynamodb", "UpdateItem"),
        ("events", "PutEvents"),
    }
    (statement,) = [
        s
        for s in statements(cloud.template.cloudformation, "RepairFunction")
        if "dynamodb:PutItem" in s["Action"]
    ]
    patterns = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    keys = [
        (call.params.get("Key") or call.params["Item"])["pk"]["S"]
        for call in calls
        if call.service == "dynamodb"
    ]
    assert keys
    outside = [key for key in keys if not any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns)]
    assert not outside


def test_every_put_events_entry_passes_the_role_condition_and_the_bus_policy(
    exercised: tuple[LocalCloud, CallLog],
) -> None:
    cloud, log = exercised
    template = TemplatePolicies(cloud.template.cloudformation, PARAMETERS)
    logical = logical_names(cloud.topology)
    refused: list[str] = []
    buses: set[str] = set()
    for function in FUNCTIONS:
        role = f"{function}Role"
        identity = template.identity_policies(role)
        for call in calls_of(cloud, log, function):
            if (call.service, call.operation) != ("events", "PutEvents"):
                continue
            buses |= {f"{function}->{logical[entry['EventBusName']]}" for entry in call.params["Entries"]}
            for request in requests_of(call, template.arn(role), template, logical):
                if decide(request, identity, template) is not Decision.ALLOW:
                    refused.append(f"{role}: PutEvents {dict(request.context)} on {request.resource}")
    assert not refused, "\n".join(refused)
    assert buses == {"RepairFunction->IngressBus", "ApprovalsFunction->IngressBus"}
