"""Fixtures and helpers for integration tests on moto in-process.

Not a conftest: test modules import what they use explicitly, e.g.
``from tests.integration.conftest_moto import aws  # noqa: F401``.

Tables are created exactly as template.yaml declares them; the pipeline helper drives the five real
stage cores with the real AWS adapters (``intentbus.runtime.Runtime``), routing what each stage
actually put on the moto bus to the stage the template's rules would deliver it to.
"""

from __future__ import annotations

import functools
import json
import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import boto3
import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext
from moto import mock_aws

from intentbus.adapters.clients import AwsClients
from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard
from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
from intentbus.config import Settings
from intentbus.envelope import Envelope
from intentbus.runtime import (
    Runtime,
    authorize_stage,
    decide_stage,
    execute_stage,
    record_stage,
    validate_stage,
)
from intentbus.stages.common import StageCore
from intentbus.testing import route
from intentbus_local.template import LocalTemplate, load_template
from tests.template_policies import TemplatePolicies

REGION = "us-east-1"
ACCOUNT = "123456789012"

WORKFLOW_TABLE = "intentbus-workflow"
IDEMPOTENCY_TABLE = "intentbus-idempotency"
CRM_TABLE = "intentbus-crm"
BUS_NAME = "intentbus-bus"
FUNCTION_NAME = "intentbus-execute"
WORKFLOW_MODULES = "intentbus.workflows.incident,intentbus.workflows.direct_tool"

_FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in-process, fake credentials, us-east-1; nothing can reach a real endpoint."""
    for name, value in _FAKE_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "INTENTBUS_CLOCK_OFFSET_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        yield


@functools.cache
def shared_session() -> boto3.session.Session:
    """One botocore session for every test client: each new session re-reads endpoints.json (~0.15 s).

    Safe to share: clients made from it use the fake credentials and region the ``aws`` fixture sets,
    and moto intercepts every client whenever a mock is active.
    """
    return boto3.session.Session(
        aws_access_key_id=_FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=_FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=_FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
        region_name=REGION,
    )


def client(service: str) -> Any:
    """A fresh client (so call-counting hooks never leak between tests) from the shared session."""
    return shared_session().client(service)  # type: ignore[call-overload]


# ------------------------------------------------------------------ tables, as template.yaml declares


@functools.cache
def _template() -> LocalTemplate:
    """Translated once per test session: samtranslator is not free."""
    return load_template()


def create_table_from_template(dynamodb: Any, logical_id: str, name: str) -> str:
    """Creates a table exactly as template.yaml declares it with its default parameters: keys, indexes,
    capacity mode, TTL."""
    cloudformation = _template().cloudformation
    properties = TemplatePolicies(cloudformation).resolve(
        cloudformation["Resources"][logical_id]["Properties"]
    )
    dynamodb.create_table(
        TableName=name,
        **{key: properties[key] for key in _TABLE_KEYS if key in properties},
    )
    ttl = properties.get("TimeToLiveSpecification")
    if ttl:
        dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
    return name


_TABLE_KEYS = ("BillingMode", "AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes")


def create_workflow_table(dynamodb: Any, name: str = WORKFLOW_TABLE) -> str:
    return create_table_from_template(dynamodb, "WorkflowTable", name)


def create_idempotency_table(dynamodb: Any, name: str = IDEMPOTENCY_TABLE) -> str:
    return create_table_from_template(dynamodb, "IdempotencyTable", name)


def create_crm_table(dynamodb: Any, name: str = CRM_TABLE) -> str:
    return create_table_from_template(dynamodb, "CrmTable", name)


# ------------------------------------------------------------------ bus and queues


def create_queue(sqs: Any, name: str) -> tuple[str, str]:
    """A queue and its ARN, with a policy that lets EventBridge send to it."""
    url = str(sqs.create_queue(QueueName=name)["QueueUrl"])
    arn = str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])
    return url, arn


def route_to_queue(events: Any, *, bus: str, rule: str, pattern: dict[str, Any], queue_arn: str) -> None:
    events.put_rule(Name=rule, EventBusName=bus, EventPattern=json.dumps(pattern), State="ENABLED")
    events.put_targets(Rule=rule, EventBusName=bus, Targets=[{"Id": f"{rule}-target", "Arn": queue_arn}])


def drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message now in the queue, received and deleted (no waiting: moto delivers synchronously)."""
    messages: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not batch:
            return messages
        messages.extend(batch)
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)],
        )


def as_lambda_body(delivered_body: str) -> str:
    """moto's EventBridge → SQS body lacks ``account``, which AWS sets; fill it in here, once."""
    event = json.loads(delivered_body)
    event.setdefault("account", ACCOUNT)
    return json.dumps(event)


# ------------------------------------------------------------------ counting AWS calls


@dataclass(frozen=True)
class ApiCall:
    service: str
    operation: str
    request: dict[str, Any]

    @property
    def tables(self) -> frozenset[str]:
        """The DynamoDB tables the call touches (TableName, RequestItems or TransactItems)."""
        names: set[str] = set()
        if "TableName" in self.request:
            names.add(str(self.request["TableName"]))
        names.update(str(name) for name in self.request.get("RequestItems", {}))
        for action in self.request.get("TransactItems", []):
            for body in action.values():
                names.add(str(body["TableName"]))
        return frozenset(names)


@dataclass
class CallLog:
    """Every API call made through the clients it is attached to, via botocore's before-call event."""

    calls: list[ApiCall] = field(default_factory=list)

    def attach(self, api: Any) -> CallLog:
        service = api.meta.service_model.service_id.hyphenize()
        api.meta.events.register(f"before-call.{service}", self._record)
        return self

    def _record(self, model: Any, params: dict[str, Any], **kwargs: Any) -> None:
        body = params.get("body") or b"{}"
        request = json.loads(body) if isinstance(body, bytes | str) else {}
        self.calls.append(ApiCall(model.metadata["endpointPrefix"], model.name, request))

    def clear(self) -> None:
        self.calls.clear()

    def operations(self, service: str | None = None) -> list[str]:
        return [call.operation for call in self.calls if service is None or call.service == service]

    def of(self, service: str, operation: str | None = None) -> list[ApiCall]:
        return [
            call
            for call in self.calls
            if call.service == service and (operation is None or call.operation == operation)
        ]


# ------------------------------------------------------------------ a Lambda context


class FakeLambdaContext:
    """What Powertools reads from the Lambda context: the invocation's remaining time."""

    function_name = FUNCTION_NAME
    aws_request_id = "req-1"

    def __init__(self, remaining_millis: int = 60_000) -> None:
        self.remaining_millis = remaining_millis

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis


def lambda_context(remaining_millis: int = 60_000) -> LambdaContext:
    return cast(LambdaContext, FakeLambdaContext(remaining_millis))


# ------------------------------------------------------------------ execute's idempotent runner


class Crash(BaseException):
    """The process died mid-way: nothing below the tool got to clean up."""


def crash() -> dict[str, Any]:
    """A tool whose process dies while it runs."""
    raise Crash


def execute_runner(
    monkeypatch: pytest.MonkeyPatch,
    dynamodb: Any,
    *,
    guard: DynamoExecutionGuard | None = None,
    lease_seconds: int = 30,
    table: str | None = None,
) -> PowertoolsIdempotentRunner:
    """Execute's runner on moto's DynamoDB, as the execute function makes it (an hour's retention, bound to
    a Lambda context with ten minutes left), on the real clock; ``table``: an idempotency table made
    already, else one is created."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", FUNCTION_NAME)
    monkeypatch.delenv(CLOCK_OFFSET_ENV, raising=False)
    runner = PowertoolsIdempotentRunner(
        table or create_idempotency_table(dynamodb),
        dynamodb,
        retention_seconds=3600,
        lease_seconds=lease_seconds,
        guard=guard,
    )
    runner.bind(lambda_context(remaining_millis=600_000))
    return runner


# ------------------------------------------------------------------ the real pipeline on moto


@dataclass(frozen=True)
class Resources:
    workflow_table: str
    idempotency_table: str
    crm_table: str
    bus: str
    quarantine_url: str
    sink_url: str
    """Receives every pipeline/workflow fact put on the bus: what the stages really published."""


@pytest.fixture
def resources(aws: None, monkeypatch: pytest.MonkeyPatch) -> Resources:
    """The template's tables, bus and quarantine queue on moto, and the environment the stages read."""
    dynamodb = client("dynamodb")
    sqs = client("sqs")
    events = client("events")
    create_workflow_table(dynamodb)
    create_idempotency_table(dynamodb)
    create_crm_table(dynamodb)
    events.create_event_bus(Name=BUS_NAME)
    quarantine_url, _ = create_queue(sqs, "intentbus-quarantine")
    sink_url, sink_arn = create_queue(sqs, "intentbus-sink")
    route_to_queue(
        events,
        bus=BUS_NAME,
        rule="all-intentbus-facts",
        pattern={"source": [{"prefix": "intentbus."}]},
        queue_arn=sink_arn,
    )
    env = {
        "WORKFLOW_TABLE": WORKFLOW_TABLE,
        "EVENT_BUS_NAME": BUS_NAME,
        "QUARANTINE_QUEUE_URL": quarantine_url,
        "INTENTBUS_ENVIRONMENT": "dev",
        "INTENTBUS_WORKFLOWS": WORKFLOW_MODULES,
        "INTENTBUS_PRODUCERS": "monitoring.example=*;crm.example=*;shop.example=*",
        "IDEMPOTENCY_TABLE": IDEMPOTENCY_TABLE,
        "CRM_TABLE": CRM_TABLE,
        "AWS_LAMBDA_FUNCTION_NAME": FUNCTION_NAME,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Resources(
        workflow_table=WORKFLOW_TABLE,
        idempotency_table=IDEMPOTENCY_TABLE,
        crm_table=CRM_TABLE,
        bus=BUS_NAME,
        quarantine_url=quarantine_url,
        sink_url=sink_url,
    )


@dataclass(frozen=True)
class Hop:
    """One message handled by one stage, and what it cost."""

    stage: str
    body: str
    outcome: str
    published: tuple[Envelope, ...]
    delivered: tuple[Envelope, ...]
    """What arrived on the bus (through a rule to an SQS queue) while the stage ran."""
    delivered_bodies: tuple[str, ...]
    """The SQS bodies moto's EventBridge rule delivered for them, as a Lambda would receive them."""
    calls: tuple[ApiCall, ...]

    def dynamodb(self, tables: frozenset[str] | None = None) -> list[ApiCall]:
        return [
            call
            for call in self.calls
            if call.service == "dynamodb" and (tables is None or call.tables & tables)
        ]

    @property
    def put_events(self) -> list[ApiCall]:
        return [call for call in self.calls if call.operation == "PutEvents"]

    def of(self, service: str) -> list[ApiCall]:
        return [call for call in self.calls if call.service == service]


SERVICES = ("dynamodb", "events", "sqs", "ecs", "cloudwatch")
STAGES = ("validate", "decide", "authorize", "execute", "record")


class MotoPipeline:
    """The five real stage cores on one Runtime (real adapters, real boto3 clients) against moto."""

    def __init__(self, resources: Resources) -> None:
        self.resources = resources
        self.runtime = Runtime(Settings.from_env(os.environ), AwsClients(shared_session()))
        self.log = CallLog()
        for service in SERVICES:
            self.log.attach(self.runtime.clients.client(service))
        builders: dict[str, Callable[[Runtime], StageCore]] = {
            "validate": validate_stage,
            "decide": decide_stage,
            "authorize": authorize_stage,
            "execute": execute_stage,
            "record": record_stage,
        }
        self.stages: dict[str, StageCore] = {name: build(self.runtime) for name, build in builders.items()}
        for stage in self.stages.values():
            stage.bind(lambda_context())
        self._sqs = client("sqs")  # not counted: the test's own view of the bus
        self.hops: list[Hop] = []

    @property
    def pipeline_tables(self) -> frozenset[str]:
        return frozenset({self.resources.workflow_table, self.resources.idempotency_table})

    def deliver(self, stage: str, body: str) -> Hop:
        self.log.clear()
        result = self.stages[stage].handle(body, f"msg-{len(self.hops)}")
        calls = tuple(self.log.calls)
        bodies = tuple(as_lambda_body(m["Body"]) for m in drain(self._sqs, self.resources.sink_url))
        delivered = tuple(Envelope.model_validate(json.loads(raw)["detail"]) for raw in bodies)
        hop = Hop(
            stage=stage,
            body=body,
            outcome=result.outcome.value,
            published=result.published,
            delivered=delivered,
            delivered_bodies=bodies,
            calls=calls,
        )
        self.hops.append(hop)
        return hop

    def run(self, body: str, *, max_hops: int = 100) -> list[Hop]:
        """Deliver ``body`` to validate, then whatever reached the bus, as the template routes it."""
        pending: deque[tuple[str, str]] = deque([("validate", body)])
        start = len(self.hops)
        while pending:
            assert len(self.hops) - start < max_hops, "the pipeline did not settle"
            stage, item = pending.popleft()
            hop = self.deliver(stage, item)
            assert sorted(e.id for e in hop.delivered) == sorted(e.id for e in hop.published), (
                f"{stage}: what reached the bus differs from what the stage says it published"
            )
            for envelope, delivered_body in zip(hop.delivered, hop.delivered_bodies, strict=True):
                target = route(envelope)
                if target is not None:
                    pending.append((target, delivered_body))
        return self.hops[start:]


def dynamodb_budget(stage: str) -> int:
    """DESIGN's budget: two DynamoDB calls per event, three at execute (the guard's resource check)."""
    return 3 if stage == "execute" else 2
