"""Resources moto's CloudFormation cannot create, created through their own moto APIs instead.

The types here are still declared in template.yaml, and only there: before ``create_stack``, each is
created with its service's API from the template's own properties, removed from the deployed copy,
and every ``Ref`` / ``Fn::GetAtt`` on it is replaced by the real value.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from intentbus_local.clients import Clients

Values = dict[str, str]
"""``Ref`` and each ``Fn::GetAtt`` attribute -> value."""


def _user_pool(clients: Clients, logical_id: str, properties: Mapping[str, Any]) -> Values:
    schema = [
        {key: value for key, value in attribute.items() if key in ("Name", "AttributeDataType", "Mutable")}
        for attribute in properties.get("Schema", [])
    ]
    pool = clients("cognito-idp").create_user_pool(
        PoolName=str(properties.get("UserPoolName", logical_id)),
        UsernameAttributes=list(properties.get("UsernameAttributes", [])),
        AutoVerifiedAttributes=list(properties.get("AutoVerifiedAttributes", [])),
        AdminCreateUserConfig=dict(properties.get("AdminCreateUserConfig", {})),
        Schema=schema,
    )["UserPool"]
    return {"Ref": pool["Id"], "Arn": pool["Arn"], "ProviderName": pool["Id"]}


def _user_pool_client(clients: Clients, logical_id: str, properties: Mapping[str, Any]) -> Values:
    """Without its OAuth settings: their callback is the API's URL, which exists only once the stack
    does, and the local front signs people in with its session token instead of the hosted UI."""
    client = clients("cognito-idp").create_user_pool_client(
        UserPoolId=str(properties["UserPoolId"]),
        ClientName=logical_id,
        GenerateSecret=False,
        ExplicitAuthFlows=list(properties.get("ExplicitAuthFlows", [])),
        ReadAttributes=list(properties.get("ReadAttributes", [])),
        WriteAttributes=list(properties.get("WriteAttributes", [])),
    )["UserPoolClient"]
    return {"Ref": client["ClientId"]}


def _user_pool_group(clients: Clients, logical_id: str, properties: Mapping[str, Any]) -> Values:
    group = clients("cognito-idp").create_group(
        GroupName=str(properties.get("GroupName", logical_id)),
        UserPoolId=str(properties["UserPoolId"]),
        Description=str(properties.get("Description", "")),
    )["Group"]
    return {"Ref": group["GroupName"]}


def _user_pool_domain(clients: Clients, logical_id: str, properties: Mapping[str, Any]) -> Values:
    """The template derives the prefix from the stack's id, which does not exist yet: a random one."""
    domain = f"intentbus-local-{uuid.uuid4().hex[:12]}"
    clients("cognito-idp").create_user_pool_domain(Domain=domain, UserPoolId=str(properties["UserPoolId"]))
    return {"Ref": domain}


CREATORS: dict[str, Callable[[Clients, str, Mapping[str, Any]], Values]] = {
    "AWS::Cognito::UserPool": _user_pool,
    "AWS::Cognito::UserPoolClient": _user_pool_client,
    "AWS::Cognito::UserPoolGroup": _user_pool_group,
    "AWS::Cognito::UserPoolDomain": _user_pool_domain,
}


def _substitute(value: Any, created: Mapping[str, Values]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"Ref"} and value["Ref"] in created:
            return created[value["Ref"]]["Ref"]
        if set(value) == {"Fn::GetAtt"}:
            target, attribute = (
                value["Fn::GetAtt"]
                if isinstance(value["Fn::GetAtt"], list)
                else (str(value["Fn::GetAtt"]).split(".", 1))
            )
            if target in created:
                return created[target][attribute]
        return {key: _substitute(item, created) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, created) for item in value]
    if isinstance(value, str) and "${" in value:
        for target, values in created.items():
            for attribute, resolved in values.items():
                name = target if attribute == "Ref" else f"{target}.{attribute}"
                value = value.replace("${" + name + "}", resolved)
    return value


def create_direct(
    clients: Clients, body: dict[str, Any], existing: Mapping[str, Mapping[str, str]] | None = None
) -> dict[str, Values]:
    """Creates the types in CREATORS (in dependency order) and rewrites ``body`` to use their values.

    ``existing`` (a redeploy): those already created are reused, not created again."""
    resources: dict[str, Any] = body["Resources"]
    kept = existing or {}
    direct = [logical for logical, resource in resources.items() if resource["Type"] in CREATORS]
    created: dict[str, Values] = {logical: dict(kept[logical]) for logical in direct if logical in kept}
    pending = [logical for logical in direct if logical not in kept]
    while pending:
        for logical_id in list(pending):
            properties = _substitute(resources[logical_id].get("Properties", {}), created)
            if any(other in str(properties) for other in pending if other != logical_id):
                continue  # it refers to one not created yet
            created[logical_id] = CREATORS[resources[logical_id]["Type"]](clients, logical_id, properties)
            pending.remove(logical_id)
    for logical_id in created:
        del resources[logical_id]
    body["Resources"] = _substitute(resources, created)
    body["Outputs"] = _substitute(body.get("Outputs", {}), created)
    return created
