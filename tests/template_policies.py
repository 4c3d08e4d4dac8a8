"""The translated template's IAM, with every intrinsic resolved, for tests/iam_eval.py to judge.

Resources get deterministic names: a resource's physical name is its logical id (or its ``Name`` /
``LogGroupName`` property, resolved, where the template sets one), in account ``ACCOUNT`` / region
``REGION``. The one AWS managed policy the template attaches (API Gateway's CloudWatch role's) is stood
in for by the actions it grants; any other managed policy the template does not declare raises.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

from tests.iam_eval import Policy

ACCOUNT = "123456789012"
REGION = "us-east-1"
STACK = "intentbus-test"
PARTITION = "aws"

_PSEUDO = {
    "AWS::AccountId": ACCOUNT,
    "AWS::Region": REGION,
    "AWS::StackName": STACK,
    "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{STACK}/0a1b2c3d-4e5f",
    "AWS::Partition": PARTITION,
    "AWS::URLSuffix": "amazonaws.com",
}
_SUB = re.compile(r"\$\{([^}!][^}]*)\}")
_NO_VALUE = object()
"""What ``!Ref AWS::NoValue`` resolves to, until its key or list item is dropped."""
_AWS_MANAGED: dict[str, list[str]] = {
    "service-role/AmazonAPIGatewayPushToCloudWatchLogs": [
        "logs:CreateLogGroup",
        "logs:CreateLogStream",
        "logs:DescribeLogGroups",
        "logs:DescribeLogStreams",
        "logs:PutLogEvents",
        "logs:GetLogEvents",
        "logs:FilterLogEvents",
    ],
}


class TemplatePolicies:
    def __init__(
        self, cloudformation: Mapping[str, Any], parameters: Mapping[str, str] | None = None
    ) -> None:
        self._template = cloudformation
        self._resources: Mapping[str, Any] = cloudformation["Resources"]
        defaults = {k: str(v.get("Default", "")) for k, v in cloudformation.get("Parameters", {}).items()}
        self._parameters = defaults | dict(parameters or {})

    # -------------------------------------------------------------------------- names and ARNs

    def name(self, logical_id: str) -> str:
        props = self._resources[logical_id].get("Properties", {})
        for key in ("Name", "LogGroupName"):
            if key in props:
                return str(self.resolve(props[key]))
        return logical_id

    def arn(self, logical_id: str) -> str:
        kind = self._resources[logical_id]["Type"]
        name = self.name(logical_id)
        arns = {
            "AWS::Events::EventBus": f"arn:{PARTITION}:events:{REGION}:{ACCOUNT}:event-bus/{name}",
            "AWS::Events::Rule": f"arn:{PARTITION}:events:{REGION}:{ACCOUNT}:rule/{name}",
            "AWS::IAM::Role": f"arn:{PARTITION}:iam::{ACCOUNT}:role/{name}",
            "AWS::IAM::ManagedPolicy": f"arn:{PARTITION}:iam::{ACCOUNT}:policy/{name}",
            "AWS::DynamoDB::Table": f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{name}",
            "AWS::SQS::Queue": f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:{name}",
            "AWS::Logs::LogGroup": f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:{name}:*",
            "AWS::KMS::Key": f"arn:{PARTITION}:kms:{REGION}:{ACCOUNT}:key/{name}",
            "AWS::Lambda::Function": f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{name}",
            "AWS::SNS::Topic": f"arn:{PARTITION}:sns:{REGION}:{ACCOUNT}:{name}",
            "AWS::Cognito::UserPool": f"arn:{PARTITION}:cognito-idp:{REGION}:{ACCOUNT}:userpool/{name}",
            "AWS::S3::Bucket": f"arn:{PARTITION}:s3:::{name}",
        }
        return arns.get(kind, f"arn:{PARTITION}:{kind}:{REGION}:{ACCOUNT}:{name}")

    def ref(self, name: str) -> str:
        if name in _PSEUDO:
            return _PSEUDO[name]
        if name in self._parameters:
            return self._parameters[name]
        kind = self._resources[name]["Type"]
        if kind in ("AWS::IAM::ManagedPolicy", "AWS::SNS::Topic"):
            return self.arn(name)
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
        return self.name(name)

    def get_att(self, logical_id: str, attribute: str) -> str:
        if attribute == "Arn":
            return self.arn(logical_id)
        if attribute in ("Name", "QueueName"):
            return self.name(logical_id)
        return f"{logical_id}.{attribute}"

    # -------------------------------------------------------------------------- intrinsics

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic resolved; ``!Ref AWS::NoValue`` drops its key or item."""
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, argument), *_ = value.items()
            if key == "Ref" and argument == "AWS::NoValue":
                return _NO_VALUE
            if key == "Ref":
                return self.ref(argument)
            if key == "Fn::If":
                name, when_true, when_false = argument
                return self.resolve(when_true if self.condition(name) else when_false)
            if key == "Fn::GetAtt":
                logical, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
                return self.get_att(logical, attribute)
            if key == "Fn::Sub":
                return self._sub(argument)
            if key == "Fn::Join":
                delimiter, items = argument
                return str(delimiter).join(str(item) for item in self.resolve(items))
            if key.startswith("Fn::"):
                raise ValueError(f"{key} is not resolved by tests/template_policies.py")
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def condition(self, name: str) -> bool:
        """A template condition, evaluated with this instance's parameter values."""
        return self._holds(self._template["Conditions"][name])

    def _holds(self, expression: Mapping[str, Any]) -> bool:
        ((key, argument),) = expression.items()
        if key == "Fn::Equals":
            left, right = (str(self.resolve(side)) for side in argument)
            return left == right
        if key == "Fn::Not":
            return not self._holds(argument[0])
        if key == "Fn::And":
            return all(self._holds(item) for item in argument)
        if key == "Fn::Or":
            return any(self._holds(item) for item in argument)
        if key == "Condition":
            return self.condition(argument)
        raise ValueError(f"condition function {key} is not evaluated by tests/template_policies.py")

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        values = {k: str(self.resolve(v)) for k, v in variables.items()}

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in values:
                return values[name]
            if "." in name:
                logical, attribute = name.split(".", 1)
                return self.get_att(logical, attribute)
            return self.ref(name)

        return _SUB.sub(one, str(text)).replace("${!", "${")

    # -------------------------------------------------------------------------- policies

    def identity_policies(self, role_logical_id: str) -> list[Policy]:
        """The role's inline policies and the managed policies it is attached to, resolved."""
        props = self._resources[role_logical_id]["Properties"]
        found: list[Policy] = [self.resolve(p["PolicyDocument"]) for p in props.get("Policies", [])]
        for arn in self.resolve(props.get("ManagedPolicyArns", [])):
            found.append(self._managed(str(arn)))
        return found

    def _managed(self, arn: str) -> Policy:
        for logical_id, resource in self._resources.items():
            if resource["Type"] == "AWS::IAM::ManagedPolicy" and self.arn(logical_id) == arn:
                document: Policy = self.resolve(resource["Properties"]["PolicyDocument"])
                return document
        prefix = f"arn:{PARTITION}:iam::aws:policy/"
        if arn.startswith(prefix) and arn[len(prefix) :] in _AWS_MANAGED:
            actions = _AWS_MANAGED[arn[len(prefix) :]]
            return {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}],
            }
        raise ValueError(f"managed policy {arn} is neither the template's nor a known AWS one")

    def bus_policies(self, bus_logical_id: str) -> list[Policy]:
        """The resource policy statements the template puts on a bus (AWS::Events::EventBusPolicy)."""
        name = self.name(bus_logical_id)
        found: list[Policy] = []
        for resource in self._resources.values():
            if resource["Type"] != "AWS::Events::EventBusPolicy":
                continue
            props = self.resolve(copy.deepcopy(resource["Properties"]))
            if props.get("EventBusName", "default") == name:
                found.append({"Version": "2012-10-17", "Statement": [props["Statement"]]})
        return found

    def log_resource_policies(self) -> list[Policy]:
        """The CloudWatch Logs resource policies the template creates (``AWS::Logs::ResourcePolicy``, a JSON
        text), resolved; one whose resource ``Condition`` does not hold with these parameters is left out."""
        found: list[Policy] = []
        for resource in self._resources.values():
            if resource["Type"] != "AWS::Logs::ResourcePolicy":
                continue
            if "Condition" in resource and not self.condition(resource["Condition"]):
                continue
            found.append(json.loads(self.resolve(resource["Properties"]["PolicyDocument"])))
        return found

    def roles(self) -> list[str]:
        return [lid for lid, r in self._resources.items() if r["Type"] == "AWS::IAM::Role"]
