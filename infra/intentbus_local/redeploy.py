"""Applies a changed template.yaml, or changed parameters, to a running local stack: UpdateStack on moto.

As ``sam deploy`` does on AWS, the template is translated and moto's CloudFormation works out what
changed (a resource whose definition changed, or that refers to a changed parameter with ``Ref``) and
adds, updates or removes just that; table items, queued messages and everything unchanged stay. Where
moto's update falls short, the local cloud steps in, from the template itself:

- ``Ref`` of a layer version made UpdateStack fail on every function with a layer (moto_fixes.py).
- moto sets only ``VisibilityTimeout`` and ``ReceiveMessageWaitTimeSeconds`` of a changed queue; the
  other attributes its definition declares (``RedrivePolicy``, ``MessageRetentionPeriod``, ...) are set
  with SetQueueAttributes afterwards.
- A changed resource whose moto model has no update (``AWS::DynamoDB::Table``, for one) is refused
  before anything changes: moto would drop it from the stack, and on AWS such a change usually replaces
  the resource (a new, empty table). Start a new local cloud for that.
- Event-source mappings stay disabled (see provision.py) and resources moto's CloudFormation lacks stay
  out, as at creation; Cognito resources (direct_resources.py) are kept as first created.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from intentbus_local import hot_paths, moto_fixes
from intentbus_local.clients import Clients
from intentbus_local.direct_resources import create_direct
from intentbus_local.provision import (
    ProvisioningError,
    apply_table_settings,
    deployable,
    read_topology,
    stack_resources,
    upload_artifacts,
    wait_for_stack,
)
from intentbus_local.template import LocalTemplate
from intentbus_local.topology import Topology

_CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
QUEUE = "AWS::SQS::Queue"
_QUEUE_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "RedrivePolicy",
    "VisibilityTimeout",
)


class RedeployError(ProvisioningError):
    pass


def update(
    clients: Clients,
    template: LocalTemplate,
    *,
    stack_name: str,
    parameters: Mapping[str, str],
    direct: Mapping[str, Mapping[str, str]],
    timeout_seconds: float = 60.0,
) -> Topology:
    """``parameters``: every parameter the stack is to have other than its defaults (UpdateStack
    keeps no earlier value)."""
    moto_fixes.apply()
    hot_paths.apply()
    cloudformation = clients.cloudformation()
    stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    deployed = _template_body(cloudformation.get_template(StackName=stack_name)["TemplateBody"])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*AWS::SQS::QueuePolicy.*")
        upload_artifacts(clients, template)
        body = deployable(template.cloudformation, parameters)
        created = create_direct(clients, body, existing=direct)
        before = {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}
        changed = changed_resources(deployed, body, _changed_parameters(template, before, parameters))
        _refuse_what_moto_cannot_update(deployed, body, changed)
        try:
            cloudformation.update_stack(
                StackName=stack_name,
                TemplateBody=json.dumps(body),
                Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
                Capabilities=_CAPABILITIES,  # type: ignore[arg-type]
            )
        except Exception as error:
            raise RedeployError(f"UpdateStack of {stack_name} failed: {error}") from error
        wait_for_stack(clients, stack_name, timeout_seconds=timeout_seconds, done="UPDATE_COMPLETE")
        physical = stack_resources(clients, stack_name)
        apply_table_settings(clients, body, physical)
        defaults = {
            name: str(spec["Default"])
            for name, spec in body.get("Parameters", {}).items()
            if isinstance(spec, Mapping) and "Default" in spec
        }
        apply_queue_settings(clients, body, physical, changed, {**defaults, **parameters})
        return read_topology(clients, template, stack_name, physical, direct=created)


def _template_body(body: Any) -> dict[str, Any]:
    """GetTemplate's body: botocore parses a JSON template into a dict, or leaves it a string."""
    parsed = json.loads(body) if isinstance(body, str) else body
    return dict(parsed)


def _changed_parameters(
    template: LocalTemplate, before: Mapping[str, str], parameters: Mapping[str, str]
) -> set[str]:
    declared: Mapping[str, Any] = template.sam.get("Parameters", {})
    after = {name: str(spec.get("Default", "")) for name, spec in declared.items()} | dict(parameters)
    return {name for name in set(before) | set(after) if before.get(name) != after.get(name)}


def changed_resources(
    deployed: Mapping[str, Any], body: Mapping[str, Any], changed_parameters: set[str]
) -> set[str]:
    """Logical ids moto's UpdateStack modifies: a definition that changed, or that refers to a changed
    parameter with ``Ref`` (moto's own rule, ``build_resource_diff``); added and removed ones are not."""
    old: Mapping[str, Any] = deployed.get("Resources", {})
    new: Mapping[str, Any] = body["Resources"]
    return {
        logical_id
        for logical_id, resource in new.items()
        if logical_id in old and (old[logical_id] != resource or set(_refs(resource)) & changed_parameters)
    }


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "Ref" and isinstance(item, str):
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _refuse_what_moto_cannot_update(
    deployed: Mapping[str, Any], body: Mapping[str, Any], changed: set[str]
) -> None:
    from moto.cloudformation.parsing import resource_class_from_type

    stuck = []
    for logical_id in sorted(changed):
        kind = body["Resources"][logical_id]["Type"]
        model = resource_class_from_type(kind)
        if model is not None and hasattr(model.update_from_cloudformation_json, "__isabstractmethod__"):
            stuck.append(f"{logical_id} ({kind})")
    if stuck:
        raise RedeployError(
            "the local cloud cannot change these resources in place (moto's CloudFormation has no update "
            f"for their type): {', '.join(stuck)}; start a new local cloud to deploy this template"
        )


def apply_queue_settings(
    clients: Clients,
    body: Mapping[str, Any],
    physical: Mapping[str, tuple[str, str]],
    changed: set[str],
    parameters: Mapping[str, str] | None = None,
) -> None:
    """Sets the attributes a changed queue's definition declares, which moto's update leaves as they were.
    A ``{"Ref": PARAMETER}`` in the RedrivePolicy (``maxReceiveCount``) takes the stack's value."""
    sqs = clients.sqs()
    for logical_id in sorted(changed):
        resource = body["Resources"][logical_id]
        if resource["Type"] != QUEUE:
            continue
        properties: Mapping[str, Any] = resource.get("Properties", {})
        attributes = {
            name: _attribute(
                clients, physical, logical_id, name, properties[name], parameters=parameters or {}
            )
            for name in _QUEUE_ATTRIBUTES
            if name in properties
        }
        if attributes:
            sqs.set_queue_attributes(QueueUrl=physical[logical_id][1], Attributes=attributes)  # type: ignore[arg-type]


def _attribute(
    clients: Clients,
    physical: Mapping[str, tuple[str, str]],
    logical_id: str,
    name: str,
    value: Any,
    *,
    parameters: Mapping[str, str],
) -> str:
    if name != "RedrivePolicy":
        return str(value)
    target = value.get("deadLetterTargetArn") if isinstance(value, Mapping) else None
    if isinstance(target, Mapping) and "Fn::GetAtt" in target:
        dlq, attribute = target["Fn::GetAtt"]
        if attribute != "Arn" or dlq not in physical:
            raise RedeployError(f"{logical_id}: cannot resolve its RedrivePolicy target {target!r}")
        arn = clients.sqs().get_queue_attributes(QueueUrl=physical[dlq][1], AttributeNames=["QueueArn"])
        target = arn["Attributes"]["QueueArn"]
    if not isinstance(target, str):
        raise RedeployError(f"{logical_id}: cannot resolve its RedrivePolicy target {target!r}")
    count = value.get("maxReceiveCount")
    if isinstance(count, Mapping) and count.get("Ref") in parameters:
        count = parameters[count["Ref"]]
    return json.dumps({**value, "deadLetterTargetArn": target, "maxReceiveCount": count})
