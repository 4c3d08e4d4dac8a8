"""``intentbus review``: paused runs — list them, resume one with a raised budget, retry the input whose
repeated failure paused it, or cancel it.

The caller's AWS identity (STS) is the reviewer; IAM fences which tenant's keys it may write.
"""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

from intentbus_cli.desks import Target, add_target_arguments, desk_parts

if TYPE_CHECKING:
    from intentbus.adapters.clients import AwsClients
    from intentbus.review import PausedRun, Result, ReviewDesk
    from intentbus.state import BudgetOverride


_P = TypeVar("_P", bound=argparse.ArgumentParser)


def add_parser(commands: argparse._SubParsersAction[_P]) -> None:
    """Registers ``review`` with its subcommands on the ``intentbus`` parser."""
    review = commands.add_parser("review", help="runs paused for review: list, resume, retry, cancel")
    add_target_arguments(review, tenant_help="the tenant whose runs to act on")
    actions = review.add_subparsers(dest="review_command", required=True, parser_class=type(review))
    actions.add_parser("list", help="paused runs, with what paused each and what it had spent")
    for name, help_text in (
        ("resume", "resume a paused run with a raised budget: its paused input is decided again"),
        ("retry", "retry a run paused by a repeated failure: the failed input is handled again"),
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
    from intentbus_cli.approvals import caller

    review_desk, clients = desk(Target.from_args(args))
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
    elif args.review_command == "retry":
        result = review_desk.retry(
            tenant_id=args.tenant,
            run_id=args.run_id,
            reviewer=reviewer,
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
    from intentbus.review import ReviewDesk

    deps, store, clients = desk_parts(target)
    return ReviewDesk(deps, store, catalog_is_deployed=False), clients


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
    then = "resume or cancel" if pause.resumable else "retry or cancel" if pause.retriable else "cancel"
    failure = f"  stage {fact.stage}, {fact.attempts} attempt(s)" if pause.retriable else ""
    return (
        f"{state.run_id}  v{state.version}  {state.workflow}  {fact.limit}: {fact.reason}{failure}  "
        f"spent {json.dumps(fact.spend, sort_keys=True)}  paused at {pause.entry.at.isoformat()}  ({then})"
    )


def answer_line(result: Result) -> str:
    return f"{result.answer.value} ({result.http_status}): {result.reason}"
