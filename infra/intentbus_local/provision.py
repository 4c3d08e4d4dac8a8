"""Deploys the translated template.yaml onto moto through CloudFormation and reads the result back.

Nothing here lists resources: whatever the template declares is created by ``create_stack``, and the
topology is read back from the stack. Where moto's CloudFormation does not reproduce a declared
property, the smallest honest fix is applied from the template itself, after the stack exists (and where
moto itself gets a type wrong, moto_fixes.py fixes it first: layer refs, archives from a template,
disabled rules, replays):

- A broker's ``AWS::Lambda::EventSourceMapping`` (Kafka ``Topics``, Amazon MQ ``Queues``) is left out:
  moto creates only SQS, DynamoDB and Kinesis mappings. The local cloud plays the Amazon MQ one against
  a real RabbitMQ from the template itself (rabbitmq_mapping.py).
- Every other ``AWS::Lambda::EventSourceMapping`` is deployed with ``Enabled: false``. An enabled mapping
  makes moto try to start a Docker Lambda on every SQS send; the local poller plays the mapping instead
  (moto honours ``Enabled``, see moto/sqs/models.py).
- ``AWS::DynamoDB::Table``: moto ignores ``TimeToLiveSpecification`` and
  ``PointInTimeRecoverySpecification``; they are applied with UpdateTimeToLive / UpdateContinuousBackups.
  (moto never expires items by TTL anyway: code filters expired items, as on AWS.)
- ``AWS::Events::EventBus`` has no physical id and no Ref in moto (``!Ref Bus`` crashes it), so the
  deployed copy gains one output per bus, ``!GetAtt <Bus>.Name`` / ``.Arn``, to read its name back.
- ``AWS::Cognito::UserPool`` / ``UserPoolClient`` / ``UserPoolGroup`` / ``UserPoolDomain`` are not in
  moto's CloudFormation: they are created through moto's Cognito API from the template's own properties
  (see direct_resources.py; the client without its OAuth settings, the domain with a random prefix).
- ``AWS::ApiGateway::Deployment`` / ``Stage``: moto's CloudFormation creates a RestApi without
  importing its Body, so a deployment of it fails; they are left out and the local cloud serves the
  API from the template's Api events itself (http_front.py).
- ``AWS::CloudWatch::Alarm`` is not in moto's CloudFormation (it would skip each one with a warning):
  the alarms are left out; nothing local evaluates alarms (cfn-lint checks their definitions). The
  dashboard and the alarms' SNS topic are created.
- ``AWS::Events::EventBusPolicy`` is not in moto's CloudFormation either, and moto enforces no IAM or
  resource policy anyway: the pipeline bus's Deny is left out, so locally anyone may put to the
  pipeline bus (the attack tests do). tests/integration/test_trust_iam.py evaluates that policy instead.
- ``AWS::ApiGateway::Account`` (the region's API Gateway settings: its CloudWatch role) is not in moto's
  CloudFormation either, and the local cloud serves the API itself: it is left out. The role it would
  name is created like any other.
- Resources' ``Metadata`` is left out of the deployed copy: moto resolves the intrinsics in it (the
  access log group's refers to the account settings, to order the two on AWS) and uses none of it.
- Not reproduced, and left so: ``AWS::SQS::QueuePolicy`` (moto skips the type; it enforces no resource
  policies anyway), a function's ``Layers``, ``Architectures``, ``TracingConfig`` and ``LoggingConfig``
  (moto's Lambda drops them; the in-process runtime imports the layer's code from ``shared/`` directly,
  the built mode puts the build's layers on each function's path, and each function's log goes to a
  file of its own), the mappings' ``ScalingConfig`` and the functions' reserved concurrency (stored; the
  local poller runs one batch at a time anyway), and rule targets'
  ``DeadLetterConfig`` / ``RetryPolicy`` (stored, never used: moto's delivery does not fail).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import logging
import time
import warnings
import zipfile
from collections.abc import Mapping
from typing import Any

from intentbus_local import hot_paths, moto_fixes
from intentbus_local.clients import Clients
from intentbus_local.conditions import without_inactive
from intentbus_local.direct_resources import create_direct
from intentbus_local.moto_resources import cached_moto_resources
from intentbus_local.template import ARTIFACT_BUCKET, LocalTemplate, artifact_key
from intentbus_local.topology import FunctionInfo, MappingInfo, QueueInfo, Topology

_BUS_OUTPUT = "LocalCloud{logical_id}{attribute}"
_UNDEPLOYABLE_API_TYPES = ("AWS::ApiGateway::Deployment", "AWS::ApiGateway::Stage")
_UNSUPPORTED_TYPES = ("AWS::CloudWatch::Alarm", "AWS::Events::EventBusPolicy", "AWS::ApiGateway::Account")
PIPELINE_BUS = "EventBus"
INGRESS_BUS = "IngressBus"
_POLL_INTERVAL = 0.05


class ProvisioningError(RuntimeError):
    pass


class _KnownGap(logging.Filter):
    """Drops moto's log line for the one resource type it skips; that gap is documented above."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "AWS::SQS::QueuePolicy" not in record.getMessage()


_KNOWN_GAP = _KnownGap()


def provision(
    clients: Clients,
    template: LocalTemplate,
    *,
    stack_name: str,
    parameters: Mapping[str, str] | None = None,
    timeout_seconds: float = 60.0,
) -> Topology:
    with cached_moto_resources():  # moto_fixes imports moto's CloudFormation, and so EC2's data
        moto_fixes.apply()
    hot_paths.apply()
    logging.getLogger("moto").addFilter(_KNOWN_GAP)
    with warnings.catch_warnings():
        # moto warns on every parse of a type it skips; that gap is known and documented above.
        warnings.filterwarnings("ignore", message=".*AWS::SQS::QueuePolicy.*")
        upload_artifacts(clients, template)
        body = deployable(template.cloudformation, parameters or {})
        direct = create_direct(clients, body)
        clients.cloudformation().create_stack(
            StackName=stack_name,
            TemplateBody=json.dumps(body),
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in (parameters or {}).items()],
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
        )
        wait_for_stack(clients, stack_name, timeout_seconds=timeout_seconds)
        physical = stack_resources(clients, stack_name)
        apply_table_settings(clients, body, physical)
        return read_topology(clients, template, stack_name, physical, direct=direct)


def upload_artifacts(clients: Clients, template: LocalTemplate) -> None:
    """The translated template points at ``s3://local/<LogicalId>.zip``; the real code runs from disk."""
    s3 = clients("s3")
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=ARTIFACT_BUCKET)
    for logical_id in template.artifacts:
        s3.put_object(Bucket=ARTIFACT_BUCKET, Key=artifact_key(logical_id), Body=_placeholder_zip(logical_id))


def _placeholder_zip(logical_id: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("LOCAL.txt", f"{logical_id}: the local cloud runs this code from its directory.\n")
    return buffer.getvalue()


def deployable(cloudformation: Mapping[str, Any], parameters: Mapping[str, str]) -> dict[str, Any]:
    body = without_inactive(copy.deepcopy(dict(cloudformation)), parameters)
    outputs = body.setdefault("Outputs", {})
    # moto creates a RestApi without importing its Body, so its Deployment fails ("no methods"): the
    # local cloud serves the API itself (http_front.py), from the template's Api events.
    for logical_id in [k for k, r in body["Resources"].items() if r["Type"] in _UNDEPLOYABLE_API_TYPES]:
        del body["Resources"][logical_id]
    # moto's CloudFormation has no alarms, bus policies or API Gateway account settings; nothing in the
    # template refers to one but a Metadata entry, and Metadata is of no use to moto.
    for logical_id in [k for k, r in body["Resources"].items() if r["Type"] in _UNSUPPORTED_TYPES]:
        del body["Resources"][logical_id]
    for logical_id in [k for k, r in body["Resources"].items() if is_broker_mapping(r)]:
        del body["Resources"][logical_id]
    for logical_id, resource in body["Resources"].items():
        resource.pop("Metadata", None)
        if resource["Type"] == "AWS::Lambda::EventSourceMapping":
            resource["Properties"]["Enabled"] = False
        elif resource["Type"] == "AWS::Events::EventBus":
            for attribute in ("Name", "Arn"):
                key = _BUS_OUTPUT.format(logical_id=logical_id, attribute=attribute)
                outputs[key] = {"Value": {"Fn::GetAtt": [logical_id, attribute]}}
    return body


def is_broker_mapping(resource: Mapping[str, Any]) -> bool:
    properties = resource.get("Properties", {})
    return resource["Type"] == "AWS::Lambda::EventSourceMapping" and bool(
        {"Topics", "Queues"} & set(properties)
    )


def wait_for_stack(
    clients: Clients, stack_name: str, *, timeout_seconds: float, done: str = "CREATE_COMPLETE"
) -> None:
    cloudformation = clients.cloudformation()
    deadline = time.monotonic() + timeout_seconds
    while True:
        stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
        status = stack["StackStatus"]
        if status == done:
            return
        if not status.endswith("_IN_PROGRESS"):
            events = cloudformation.describe_stack_events(StackName=stack_name)["StackEvents"]
            reasons = [
                f"{e.get('LogicalResourceId')}: {e.get('ResourceStatusReason')}"
                for e in events
                if "FAILED" in str(e.get("ResourceStatus"))
            ]
            raise ProvisioningError(
                f"stack {stack_name} ended {status}: {reasons or stack.get('StackStatusReason')}"
            )
        if time.monotonic() > deadline:
            raise ProvisioningError(f"stack {stack_name} still {status} after {timeout_seconds} s")
        time.sleep(_POLL_INTERVAL)


def stack_resources(clients: Clients, stack_name: str) -> dict[str, tuple[str, str]]:
    """Logical id -> (type, physical id). moto lists skipped types with empty ids: they are left out."""
    found: dict[str, tuple[str, str]] = {}
    paginator = clients.cloudformation().get_paginator("list_stack_resources")
    for page in paginator.paginate(StackName=stack_name):
        for summary in page["StackResourceSummaries"]:
            if summary.get("LogicalResourceId"):
                found[summary["LogicalResourceId"]] = (
                    summary["ResourceType"],
                    summary.get("PhysicalResourceId", ""),
                )
    return found


def apply_table_settings(
    clients: Clients, body: Mapping[str, Any], physical: Mapping[str, tuple[str, str]]
) -> None:
    dynamodb = clients.dynamodb()
    for logical_id, resource in body["Resources"].items():
        if resource["Type"] != "AWS::DynamoDB::Table":
            continue
        table = physical[logical_id][1]
        props = resource.get("Properties", {})
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            current = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
            if current.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
                dynamodb.update_time_to_live(
                    TableName=table,
                    TimeToLiveSpecification={"AttributeName": str(ttl["AttributeName"]), "Enabled": True},
                )
        pitr = props.get("PointInTimeRecoverySpecification")
        if pitr and pitr.get("PointInTimeRecoveryEnabled"):
            backups = dynamodb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
            status = backups.get("PointInTimeRecoveryDescription", {}).get("PointInTimeRecoveryStatus")
            if status != "ENABLED":
                dynamodb.update_continuous_backups(
                    TableName=table,
                    PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
                )


def read_topology(
    clients: Clients,
    template: LocalTemplate,
    stack_name: str,
    physical: Mapping[str, tuple[str, str]],
    *,
    direct: Mapping[str, Mapping[str, str]] | None = None,
) -> Topology:
    stack = clients.cloudformation().describe_stacks(StackName=stack_name)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", []) if "OutputValue" in o}
    account_id = stack["StackId"].split(":")[4]

    queues, redrive, visibility = _read_queues(clients, physical)
    by_arn = {q.arn: q for q in queues.values()}
    dlqs = {lid: by_arn[arn] for lid, (arn, _) in redrive.items() if arn in by_arn}

    buses = sorted(lid for lid, (kind, _) in physical.items() if kind == "AWS::Events::EventBus")
    if buses != sorted((PIPELINE_BUS, INGRESS_BUS)):
        raise ProvisioningError(
            f"the local cloud expects the buses {PIPELINE_BUS} and {INGRESS_BUS}, the template has {buses}"
        )

    def bus(logical_id: str, attribute: str) -> str:
        return outputs[_BUS_OUTPUT.format(logical_id=logical_id, attribute=attribute)]

    functions: dict[str, FunctionInfo] = {}
    lambda_ = clients.lambda_()
    for logical_id, spec in template.functions.items():
        if logical_id not in physical:  # a function whose Condition is false was not created
            continue
        name = physical[logical_id][1]
        config = lambda_.get_function_configuration(FunctionName=name)
        mappings: list[MappingInfo] = []
        for esm in lambda_.list_event_source_mappings(FunctionName=name)["EventSourceMappings"]:
            queue = by_arn.get(esm.get("EventSourceArn", ""))
            if queue is None:
                continue
            max_receive = redrive.get(queue.logical_id)
            mappings.append(
                MappingInfo(
                    function_logical_id=logical_id,
                    queue=queue,
                    batch_size=int(esm.get("BatchSize", 10)),
                    batching_window_seconds=int(esm.get("MaximumBatchingWindowInSeconds", 0)),
                    report_batch_item_failures="ReportBatchItemFailures"
                    in esm.get("FunctionResponseTypes", []),
                    visibility_timeout=visibility[queue.logical_id],
                    max_receive_count=max_receive[1] if max_receive else None,
                    dlq=dlqs.get(queue.logical_id),
                )
            )
        functions[logical_id] = FunctionInfo(
            logical_id=logical_id,
            name=name,
            arn=config["FunctionArn"],
            code_dir=spec.code_dir,
            handler=config.get("Handler", spec.handler),
            timeout=int(config.get("Timeout", spec.timeout)),
            memory_size=int(config.get("MemorySize", spec.memory_size)),
            # Strings, as Lambda holds them: CloudFormation turns a Number parameter's value into one.
            environment={
                name: str(value) for name, value in config.get("Environment", {}).get("Variables", {}).items()
            },
            mappings=tuple(mappings),
        )

    return Topology(
        stack_name=stack_name,
        account_id=account_id,
        region=clients.region,
        bus_name=bus(PIPELINE_BUS, "Name"),
        bus_arn=bus(PIPELINE_BUS, "Arn"),
        ingress_bus_name=bus(INGRESS_BUS, "Name"),
        ingress_bus_arn=bus(INGRESS_BUS, "Arn"),
        queues=queues,
        tables={lid: pid for lid, (kind, pid) in physical.items() if kind == "AWS::DynamoDB::Table"},
        dlqs=dlqs,
        functions=functions,
        outputs={k: v for k, v in outputs.items() if not k.startswith("LocalCloud")},
        direct_resources=dict(direct or {}),
    )


def _read_queues(
    clients: Clients, physical: Mapping[str, tuple[str, str]]
) -> tuple[dict[str, QueueInfo], dict[str, tuple[str, int]], dict[str, int]]:
    """Queues by logical id; each queue's redrive (DLQ arn, maxReceiveCount); each visibility timeout."""
    sqs = clients.sqs()
    queues: dict[str, QueueInfo] = {}
    redrive: dict[str, tuple[str, int]] = {}
    visibility: dict[str, int] = {}
    for logical_id, (kind, url) in physical.items():
        if kind != "AWS::SQS::Queue":
            continue
        attributes = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["QueueArn", "VisibilityTimeout", "RedrivePolicy"]
        )["Attributes"]
        arn = attributes["QueueArn"]
        queues[logical_id] = QueueInfo(logical_id=logical_id, url=url, arn=arn, name=arn.rsplit(":", 1)[1])
        visibility[logical_id] = int(attributes.get("VisibilityTimeout", "30"))
        if "RedrivePolicy" in attributes:
            policy = json.loads(attributes["RedrivePolicy"])
            redrive[logical_id] = (policy["deadLetterTargetArn"], int(policy["maxReceiveCount"]))
    return queues, redrive, visibility
