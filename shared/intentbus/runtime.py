"""Wires a stage to its AWS adapters from the function's environment; built once per warm container."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from intentbus import spans
from intentbus.adapters.clients import AwsClients
from intentbus.adapters.clock import SystemClock
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.adapters.eventbridge_bus import EventBridgeBus
from intentbus.adapters.s3_claims import S3Claims
from intentbus.adapters.sqs_quarantine import SqsQuarantine
from intentbus.catalog import Catalog
from intentbus.claims import ClaimCheckingBus
from intentbus.config import Settings
from intentbus.outbox import Outbox
from intentbus.principals import parse_roles
from intentbus.producers import ProducerBindings
from intentbus.stages.common import StageDeps

if TYPE_CHECKING:
    from intentbus.adapters.bedrock_agent import ClientSource
    from intentbus.adapters.dynamodb_park import DynamoParkStore
    from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
    from intentbus.approvals import ApprovalDesk
    from intentbus.definition import ModelProvider
    from intentbus.repair import EventBridgeSubmit
    from intentbus.repair_desk import RepairDesk
    from intentbus.repair_worker import RepairWorker
    from intentbus.review import ReviewDesk
    from intentbus.stages.authorize import AuthorizeStage
    from intentbus.stages.decide import DecideStage
    from intentbus.stages.execute import ExecuteStage
    from intentbus.stages.record import RecordStage
    from intentbus.stages.validate import ValidateStage


class Runtime:
    def __init__(self, settings: Settings, clients: AwsClients) -> None:
        self.settings = settings
        self.clients = clients
        self.outbox = Outbox()
        """What the stage handler holds while a batch runs and sends at its end (``events.send_held``)."""
        clock = SystemClock()
        catalog = Catalog.from_modules(settings.intentbus_workflows)
        catalog.check_receives(settings.intentbus_max_receive_count)
        claims = (
            None
            if settings.intentbus_claim_bucket is None
            else S3Claims(settings.intentbus_claim_bucket, lambda: clients.client("s3"))
        )
        self.events = EventBridgeBus(
            settings.event_bus_name, lambda: clients.client("events"), outbox=self.outbox
        )
        self.deps = StageDeps(
            catalog=catalog,
            bus=ClaimCheckingBus(self.events, claims, settings.intentbus_claim_check_bytes),
            quarantine=SqsQuarantine(settings.quarantine_queue_url, clients.lazy("sqs"), clock),
            clock=clock,
            environment=settings.intentbus_environment,
            settings=dict(os.environ),
            producers=ProducerBindings.parse(settings.intentbus_producers),
            id_salt=settings.intentbus_id_salt,
            pipeline_roles=parse_roles(settings.intentbus_pipeline_roles),
            claims=claims,
        )
        self.store = DynamoWorkflowStore(settings.workflow_table, clients.lazy("dynamodb"))

    @classmethod
    def from_env(cls) -> Runtime:
        settings = Settings.from_env(os.environ)
        spans.configure(settings.tracing_backend)
        return cls(settings, AwsClients())


def validate_stage(runtime: Runtime) -> ValidateStage:
    from intentbus.stages.validate import ValidateStage

    return ValidateStage(runtime.deps, runtime.store)


def decide_stage(runtime: Runtime) -> DecideStage:
    from intentbus.stages.decide import DecideStage

    return DecideStage(runtime.deps, runtime.store, models=model_provider(runtime))


def model_provider(runtime: Runtime) -> ModelProvider | None:
    """Bedrock for the workflows' model agents when ``BEDROCK_MODEL_ID`` is set; else their fallbacks.

    The client is created on the first decision that needs it, in ``BEDROCK_REGION`` (by default the
    function's region).
    """
    bedrock = runtime.settings.bedrock()
    if bedrock is None:
        return None
    from intentbus.adapters.bedrock_agent import BedrockModels

    return BedrockModels.from_settings(bedrock)


def authorize_stage(runtime: Runtime) -> AuthorizeStage:
    from intentbus.stages.authorize import AuthorizeStage

    return AuthorizeStage(runtime.deps, runtime.store)


def execute_stage(runtime: Runtime) -> ExecuteStage:
    from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard
    from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
    from intentbus.stages.execute import ExecuteStage

    guard = DynamoExecutionGuard(runtime.settings.workflow_table, runtime.clients.client("dynamodb"))
    runner = redis_runner(runtime) or PowertoolsIdempotentRunner(
        runtime.settings.require_idempotency_table(),
        runtime.clients.client("dynamodb"),
        retention_seconds=runtime.settings.idempotency_retention_seconds,
        lease_seconds=runtime.settings.idempotency_lease_seconds,
        guard=guard,
    )
    return ExecuteStage(runtime.deps, runner, runtime.clients, guard, store=runtime.store)


def redis_runner(runtime: Runtime) -> PowertoolsIdempotentRunner | None:
    """Execute's idempotency records in Redis when ``IDEMPOTENCY_REDIS_ENDPOINT`` is set; else ``None``.

    The AUTH token, if any, is read once from Secrets Manager (``IDEMPOTENCY_REDIS_SECRET_ARN``)."""
    settings = runtime.settings
    if settings.idempotency_redis_endpoint is None:
        return None
    from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
    from intentbus.adapters.redis_idempotency import LeasedCachePersistenceLayer, redis_client

    secret = None
    if settings.idempotency_redis_secret_arn is not None:
        secrets = runtime.clients.client("secretsmanager")
        secret = secrets.get_secret_value(SecretId=settings.idempotency_redis_secret_arn)["SecretString"]
    client = redis_client(
        settings.idempotency_redis_endpoint,
        settings.idempotency_redis_port,
        tls=settings.idempotency_redis_tls,
        secret=secret,
    )
    persistence = LeasedCachePersistenceLayer(client)
    return PowertoolsIdempotentRunner.over(
        persistence,
        persistence,
        retention_seconds=settings.idempotency_retention_seconds,
        lease_seconds=settings.idempotency_lease_seconds,
    )


def record_stage(runtime: Runtime) -> RecordStage:
    from intentbus.stages.record import RecordStage

    return RecordStage(runtime.deps, runtime.store)


def approval_desk(runtime: Runtime) -> ApprovalDesk:
    from intentbus.approvals import ApprovalDesk

    return ApprovalDesk(runtime.deps, runtime.store, frozenset(runtime.deps.pipeline_roles.values()))


def review_desk(runtime: Runtime) -> ReviewDesk:
    from intentbus.review import ReviewDesk

    return ReviewDesk(runtime.deps, runtime.store, frozenset(runtime.deps.pipeline_roles.values()))


def repair_worker(runtime: Runtime, model_client: ClientSource | None = None) -> RepairWorker:
    """The repair function's worker: Bedrock when ``BEDROCK_MODEL_ID`` is set (``model_client`` replaces
    its client, e.g. a stubbed one), else no model, and every repairable input waits for a person."""
    from intentbus.repair_worker import RepairWorker

    repairer = None
    bedrock = runtime.settings.bedrock()
    if bedrock is not None:
        from intentbus.adapters.bedrock_agent import BedrockInputRepairer, BedrockModels

        repairer = BedrockInputRepairer(BedrockModels.from_settings(bedrock, model_client).converse)
    return RepairWorker(
        types=runtime.deps.catalog.types,
        producers=runtime.deps.producers,
        store=_park_store(runtime),
        repairer=repairer,
        submit=_ingress_submit(runtime),
        now=runtime.deps.clock.now,
        budget_per_hour=runtime.settings.repair_budget_per_hour,
    )


def repair_desk(runtime: Runtime) -> RepairDesk:
    from intentbus.repair_desk import RepairDesk

    return RepairDesk(
        store=_park_store(runtime),
        types=runtime.deps.catalog.types,
        submit=_ingress_submit(runtime),
        now=runtime.deps.clock.now,
    )


def _park_store(runtime: Runtime) -> DynamoParkStore:
    from intentbus.adapters.dynamodb_park import DynamoParkStore

    return DynamoParkStore(runtime.settings.workflow_table, runtime.clients.client("dynamodb"))


def _ingress_submit(runtime: Runtime) -> EventBridgeSubmit:
    from intentbus.repair import EventBridgeSubmit

    return EventBridgeSubmit(runtime.clients.client("events"), runtime.settings.require_ingress_bus())
