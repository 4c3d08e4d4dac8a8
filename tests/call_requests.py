"""The IAM requests a recorded AWS call makes, named as the template names its resources.

A call made on the local cloud names physical resources (moto's table and bus names); the template's
policies, resolved by tests/template_policies.py, name them by logical id. ``logical_names`` maps the
one to the other, ``requests_of`` turns a call into what IAM would authorize, and ``decide`` evaluates
one with the resource policies of the bus it targets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from intentbus_local.topology import Topology
from tests.botocore_calls import Call
from tests.iam_eval import Decision, Policy, Request, evaluate
from tests.template_policies import TemplatePolicies

BUSES = ("EventBus", "IngressBus")
_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "ConditionCheck": "ConditionCheckItem",
    "Delete": "DeleteItem",
}


def logical_names(topology: Topology) -> dict[str, str]:
    """Physical name -> logical id, for the stack's tables and buses."""
    names = {name: logical for logical, name in topology.tables.items()}
    return names | {topology.bus_name: "EventBus", topology.ingress_bus_name: "IngressBus"}


def requests_of(
    call: Call, principal: str, template: TemplatePolicies, logical: Mapping[str, str]
) -> list[Request]:
    """DynamoDB and PutEvents calls; any other raises (this module does not know its resources)."""

    def table(name: str, index: str | None = None) -> str:
        arn = template.arn(logical[name])
        return f"{arn}/index/{index}" if index else arn

    if call.service == "dynamodb" and call.operation == "TransactWriteItems":
        return [
            Request(principal, f"dynamodb:{_TRANSACT_ACTIONS[kind]}", table(action["TableName"]))
            for item in call.params["TransactItems"]
            for kind, action in item.items()
        ]
    if call.service == "dynamodb" and call.operation == "BatchGetItem":
        return [
            Request(principal, "dynamodb:BatchGetItem", table(name)) for name in call.params["RequestItems"]
        ]
    if call.service == "dynamodb":
        resource = table(call.params["TableName"], call.params.get("IndexName"))
        return [Request(principal, f"dynamodb:{call.operation}", resource)]
    if call.service == "events" and call.operation == "PutEvents":
        return [
            Request(
                principal,
                "events:PutEvents",
                template.arn(logical[entry["EventBusName"]]),
                {"events:source": entry["Source"]},
            )
            for entry in call.params["Entries"]
        ]
    raise ValueError(f"no IAM request known for {call.service}.{call.operation}")


def decide(request: Request, identity: Sequence[Policy], template: TemplatePolicies) -> Decision:
    """``request`` judged by ``identity`` and, on a bus, the template's policy for that bus."""
    buses = {template.arn(bus): bus for bus in BUSES}
    resource = template.bus_policies(buses[request.resource]) if request.resource in buses else []
    return evaluate(request, identity, resource)
