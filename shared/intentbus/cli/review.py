"""``intentbus review``: paused runs — list them, resume one with a raised budget, or cancel it.

The caller's AWS identity (STS) is the reviewer; IAM fences which tenant's keys it may write.
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from intentbus.adapters.clients import AwsClients
    from intentbus.cli.approvals import Target
    from intentbus.review import PausedRun, Result, ReviewDesk
    from intentbus.state import BudgetOverride


_P = TypeVar("_P", bound=argparse.ArgumentParser)


def add_parser(commands: argparse._SubParsersAction[_P], default_workflows: str) -> None:
    """Registers ``review`` with its subcommands on the ``intentbus`` parser."""
    review = commands.add_parser("review", help="runs paused for review: list, resume, cancel")
    review.add_argument(
        "--table",
        default=os.environ.get("WORKFLOW_TABLE"),
        help="the workflow table (default: $WORKFLOW_TABLE; the stack's WorkflowTableName)",
    )
    review.add_argument(
        "--bus",
        default=os.environ.get("EVENT_BUS_NAME"),
        help="the bus (default: $EVENT_BUS_NAME; the stack's EventBusName)",
    )
    review.add_argument("--workflows", default=os.environ.get("INTENTBUS_WORKFLOWS", default_workflows))
    review.add_argument("--environment", default=os.environ.get("INTENTBUS_ENVIRONMENT", "dev"))
    review.add_argument("--endpoint-url", help="another endpoint, e.g. a moto server")
    review.add_argument("--tenant", required=True, help="the tenant whose runs to act on")
    actions = review.add_subparsers(dest="review_command", required=True, parser_class=type(review))
    actions.add_parser("list", help="paused runs, with what paused each and what it had spent")
    for name, help_text in (
        ("resume", "resume a paused run with a raised budget: its paused input is decided again"),
        ("cancel", "cancel a paused run: it ends CANCELLED"),
    ):
        action = actions.add_parser(name, help=help_text)
        action.add_argument("run_id")
        action.add_argument(
            "--version",
            type=int,
            help="the version of the pause you answer (see list); default: the run's latest pause",
        )
        action.add_argument("--reason", required=True, help="why: kept in the run's log")
        if name == "resume":
            action.add_argument("--max-depth", type=int, help="the run's new causation depth limit")
            action.add_argument("--max-steps", type=int, help="the run's new step limit")
            action.add_argument("--max-tokens", type=int, help="the run's new token limit")
            action.add_argument(
                "--deadline-hours", type=float, help="the run's new deadline, in hours from its start"
            )


def run(args: argparse.Namespace) -> int:
    from intentbus.cli.approvals import Target, caller

    target = Target(
        table=args.table,
        bus=args.bus,
        workflows=args.workflows,
        environment=args.environment,
        endpoint_url=args.endpoint_url,
    )
    review_desk, clients = desk(target)
    if args.review_command == "list":
        paused = review_desk.paused(args.tenant)
        for item in paused:
            print(summary(item))
        print(f"{len(paused)} paused run(s) for {args.tenant}")
        return 0
    reviewer = caller(clients, args.tenant)
    if args.review_command == "resume":
        result = review_desk.resume(
            tenant_id=args.tenant,
            run_id=args.run_id,
            reviewer=reviewer,
            budget=raised_budget(args),
            reason=args.reason,
            version=args.version,
        )
    else:
        result = review_desk.cancel(
            tenant_id=args.tenant,
            run_id=args.run_id,
            reviewer=reviewer,
            reason=args.reason,
            version=args.version,
        )
    print(answer_line(result))
    return 0 if result.ok else 1


def desk(target: Target) -> tuple[ReviewDesk, AwsClients]:
    from intentbus.adapters.clients import AwsClients
    from intentbus.adapters.clock import SystemClock
    from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
    from intentbus.adapters.eventbridge_bus import EventBridgeBus
    from intentbus.catalog import Catalog
    from intentbus.errors import ConfigurationError
    from intentbus.review import ReviewDesk
    from intentbus.stages.common import StageDeps

    if not target.table or not target.bus:
        raise ConfigurationError(
            "pass --table and --bus (or set WORKFLOW_TABLE and EVENT_BUS_NAME): see the stack outputs"
        )
    clients = AwsClients(endpoint_url=target.endpoint_url)
    deps = StageDeps(
        catalog=Catalog.from_modules(target.workflows),
        bus=EventBridgeBus(target.bus, clients.client("events")),
        quarantine=_NoQuarantine(),
        clock=SystemClock(),
        environment=target.environment,
    )
    return ReviewDesk(deps, DynamoWorkflowStore(target.table, clients.client("dynamodb"))), clients


class _NoQuarantine:
    def put(self, *, stage: str, reason: str, field: str | None, body: str, message_id: str | None) -> None:
        from intentbus.errors import ConfigurationError

        raise ConfigurationError(f"the review CLI quarantines nothing ({stage}: {reason})")


def raised_budget(args: argparse.Namespace) -> BudgetOverride:
    from intentbus.state import BudgetOverride

    hours: float | None = args.deadline_hours
    return BudgetOverride(
        max_depth=args.max_depth,
        max_steps=args.max_steps,
        max_tokens=args.max_tokens,
        deadline=None if hours is None else timedelta(hours=hours),
    )


def summary(item: PausedRun) -> str:
    state, pause = item.state, item.pause
    fact = pause.fact
    then = "resume or cancel" if pause.resumable else "cancel"
    return (
        f"{state.run_id}  v{state.version}  {state.workflow}  {fact.limit}: {fact.reason}  "
        f"spent {json.dumps(fact.spend, sort_keys=True)}  paused at {pause.entry.at.isoformat()}  ({then})"
    )


def answer_line(result: Result) -> str:
    return f"{result.answer.value} ({result.http_status}): {result.reason}"
