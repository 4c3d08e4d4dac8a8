"""What the people's commands (``approvals``, ``review``) share: their options and how a desk is built.

A desk is the library's decision-taking core (ApprovalDesk, ReviewDesk) over the deployed table and
bus, acting as the caller's AWS identity.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from intentbus.adapters.clients import AwsClients
    from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
    from intentbus.stages.common import StageDeps


@dataclass(frozen=True)
class Target:
    table: str | None
    bus: str | None
    workflows: str
    environment: str
    endpoint_url: str | None = None
    claim_bucket: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Target:
        return cls(
            table=args.table,
            bus=args.bus,
            workflows=args.workflows,
            environment=args.environment,
            endpoint_url=args.endpoint_url,
            claim_bucket=args.claim_bucket,
        )


def add_target_arguments(parser: argparse.ArgumentParser, *, tenant_help: str) -> None:
    parser.add_argument(
        "--table",
        default=os.environ.get("WORKFLOW_TABLE"),
        help="the workflow table (default: $WORKFLOW_TABLE; the stack's WorkflowTableName)",
    )
    parser.add_argument(
        "--bus",
        default=os.environ.get("EVENT_BUS_NAME"),
        help="the bus (default: $EVENT_BUS_NAME; the stack's EventBusName)",
    )
    from intentbus_cli.project import WORKFLOWS_HELP

    parser.add_argument("--workflows", help=WORKFLOWS_HELP)
    parser.add_argument("--environment", default=os.environ.get("INTENTBUS_ENVIRONMENT", "dev"))
    parser.add_argument(
        "--claim-bucket",
        default=os.environ.get("INTENTBUS_CLAIM_BUCKET"),
        help="where a fact too large for its entry keeps its payload (default: $INTENTBUS_CLAIM_BUCKET; "
        "the stack's ClaimCheckBucketName)",
    )
    parser.add_argument("--endpoint-url", help="another endpoint, e.g. a moto server")
    parser.add_argument("--tenant", required=True, help=tenant_help)


def desk_parts(target: Target) -> tuple[StageDeps, DynamoWorkflowStore, AwsClients]:
    """The dependencies a desk takes, over the target's table and bus; one line if either is missing."""
    from intentbus.adapters.clients import AwsClients
    from intentbus.adapters.clock import SystemClock
    from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
    from intentbus.adapters.eventbridge_bus import EventBridgeBus
    from intentbus.adapters.s3_claims import S3Claims
    from intentbus.catalog import Catalog
    from intentbus.claims import ClaimCheckingBus
    from intentbus.errors import ConfigurationError
    from intentbus.limits import claim_check_threshold
    from intentbus.ports import DeskQuarantine
    from intentbus.stages.common import StageDeps

    if not target.table or not target.bus:
        raise ConfigurationError(
            "pass --table and --bus (or set WORKFLOW_TABLE and EVENT_BUS_NAME): see the stack outputs"
        )
    clients = AwsClients(endpoint_url=target.endpoint_url)
    # Without a bucket a fact too large for its entry is refused with the reason, never half-published.
    claims = None if not target.claim_bucket else S3Claims(target.claim_bucket, lambda: clients.client("s3"))
    deps = StageDeps(
        catalog=Catalog.from_modules(target.workflows),
        bus=ClaimCheckingBus(
            EventBridgeBus(target.bus, clients.client("events")),
            claims,
            claim_check_threshold(dict(os.environ)),
        ),
        quarantine=DeskQuarantine(),
        clock=SystemClock(),
        environment=target.environment,
        claims=claims,
    )
    return deps, DynamoWorkflowStore(target.table, clients.client("dynamodb")), clients
