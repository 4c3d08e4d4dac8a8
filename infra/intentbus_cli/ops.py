"""The operator commands, ``runs``, ``dlq`` and ``quarantine``: their arguments and their dispatch.

Each reads where to look from ``--stack`` (``$INTENTBUS_STACK``) or the names given directly, and
``--endpoint-url`` for another endpoint (a moto server). Nothing here runs at import but argparse.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from intentbus_cli.failures import UsageError

COMMANDS = ("runs", "dlq", "quarantine")


def _where() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--stack",
        default=os.environ.get("INTENTBUS_STACK"),
        help="the deployed stack whose resources to use (default: $INTENTBUS_STACK)",
    )
    common.add_argument("--endpoint-url", help="another endpoint, e.g. a moto server")
    return common


def _queue_options(where: argparse.ArgumentParser, *, env: str | None) -> argparse.ArgumentParser:
    queue = argparse.ArgumentParser(add_help=False, parents=[where])
    default = os.environ.get(env) if env else None
    queue.add_argument(
        "--queue",
        default=default,
        help="a queue URL, name or the stack's logical id" + (f" (default: ${env})" if env else ""),
    )
    queue.add_argument(
        "--wait-seconds",
        type=int,
        default=1,
        help="ReceiveMessage long poll; one empty poll ends a pass (default 1; 0 for a local emulator)",
    )
    return queue


def _moves(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="say what would move; move nothing")
    parser.add_argument("--max", type=int, dest="max_messages", help="move at most this many")


def add_commands(commands: Any) -> None:
    """Adds the three commands to the ``intentbus`` subparsers."""
    from intentbus.state import Status

    where = _where()

    runs = commands.add_parser("runs", help="a tenant's runs, and one run's timeline from its durable log")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True, parser_class=type(runs))
    table = argparse.ArgumentParser(add_help=False, parents=[where])
    table.add_argument(
        "--table",
        default=os.environ.get("WORKFLOW_TABLE"),
        help="the workflow table (default: $WORKFLOW_TABLE, else the stack's WorkflowTable)",
    )
    table.add_argument("--tenant", required=True, help="the tenant whose runs to read")
    table.add_argument("--json", action="store_true", help="JSON instead of a table")
    listing = runs_commands.add_parser("list", parents=[table], help="runs, newest first")
    listing.add_argument(
        "--status",
        type=str.upper,
        choices=[status.value for status in Status],
        help="only runs with this status",
    )
    show = runs_commands.add_parser("show", parents=[table], help="one run's timeline")
    show.add_argument("run_id")

    dlq = commands.add_parser("dlq", help="dead-letter queues: list, show, redrive")
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True, parser_class=type(dlq))
    dlq_queue = _queue_options(where, env=None)
    dlq_commands.add_parser("list", parents=[dlq_queue], help="every DLQ's messages (or --queue's)")
    dlq_show = dlq_commands.add_parser("show", parents=[dlq_queue], help="one message in full")
    dlq_show.add_argument("message_id")
    redrive = dlq_commands.add_parser(
        "redrive", parents=[dlq_queue], help="move messages back to the queue they dead-lettered from"
    )
    redrive.add_argument("--to", help="another destination queue (URL, name or logical id)")
    _moves(redrive)
    redrive.add_argument(
        "--method",
        choices=("auto", "task", "move"),
        default="auto",
        help="task: SQS's StartMessageMoveTask; move: receive, send, delete; auto (default): the task "
        "where SQS has it and no --dry-run/--max asks otherwise",
    )
    redrive.add_argument("--no-wait", dest="wait", action="store_false", help="start the task, do not follow")

    quarantine = commands.add_parser(
        "quarantine", help="malformed input: list, show, resubmit; parked inputs: parked, repair"
    )
    q_commands = quarantine.add_subparsers(dest="quarantine_command", required=True, parser_class=type(dlq))
    q_queue = _queue_options(where, env="QUARANTINE_QUEUE_URL")
    q_commands.add_parser("list", parents=[q_queue], help="quarantined messages with their reasons")
    q_show = q_commands.add_parser("show", parents=[q_queue], help="one message in full")
    q_show.add_argument("message_id")
    q_show.add_argument(
        "--raw-output",
        action="store_true",
        help="also show the model output a rejected decision kept (hidden by default: it may hold "
        "anything the model wrote, a card number it echoed included)",
    )
    resubmit = q_commands.add_parser(
        "resubmit", parents=[q_queue], help="send messages back to the stage that refused them"
    )
    resubmit.add_argument("message_ids", nargs="*", metavar="MESSAGE_ID")
    resubmit.add_argument("--all", action="store_true", help="every quarantined message")
    resubmit.add_argument(
        "--detail", type=Path, help="a JSON file: the repaired envelope for the one message"
    )
    resubmit.add_argument("--to", help="another destination queue (default: the refusing stage's queue)")
    _moves(resubmit)
    parked_where = argparse.ArgumentParser(add_help=False, parents=[where])
    parked_where.add_argument(
        "--table",
        default=os.environ.get("WORKFLOW_TABLE"),
        help="the workflow table (default: $WORKFLOW_TABLE, else the stack's WorkflowTable)",
    )
    parked = q_commands.add_parser(
        "parked",
        parents=[parked_where],
        help="inputs the repair function could not repair (RepairQuarantined)",
    )
    parked.add_argument("--tenant", help="one tenant's (default: every tenant's)")
    parked.add_argument("--json", action="store_true", help="JSON instead of a table")
    repair = q_commands.add_parser(
        "repair", parents=[parked_where], help="resubmit a parked input, edited, or discard it with a reason"
    )
    repair.add_argument("park_id", metavar="ID")
    repair.add_argument("--tenant", help="its tenant (default: found among every tenant's parked inputs)")
    repair.add_argument("--payload", type=Path, help="a JSON file: the new payload, in the original envelope")
    repair.add_argument("--detail", type=Path, help="a JSON file: the whole new event detail")
    repair.add_argument("--discard", action="store_true", help="drop it (with --reason)")
    repair.add_argument("--reason", help="why it is discarded")
    repair.add_argument(
        "--bus",
        default=os.environ.get("INGRESS_BUS_NAME"),
        help="the ingress bus (default: $INGRESS_BUS_NAME, else the stack's IngressBus)",
    )


def dispatch(args: argparse.Namespace) -> int:
    try:
        if args.command == "runs":
            return _runs(args)
        if args.command == "dlq":
            return _dlq(args)
        return _quarantine(args)
    except KeyboardInterrupt:
        print(
            "intentbus: interrupted: what was moved is moved and nothing is lost; run it again for the rest",
            file=sys.stderr,
        )
        return 130


def _target(args: argparse.Namespace) -> Any:
    from intentbus_cli.targets import Target

    return Target(stack=args.stack, endpoint_url=args.endpoint_url)


def _runs(args: argparse.Namespace) -> int:
    from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
    from intentbus_cli import runs

    target = _target(args)
    store = DynamoWorkflowStore(target.workflow_table(args.table), target.client("dynamodb"))
    if args.runs_command == "list":
        return runs.list_runs(store, args.tenant, args.status, as_json=args.json)
    return runs.show_run(store, args.tenant, args.run_id, as_json=args.json)


def _sqs(args: argparse.Namespace, target: Any) -> Any:
    from botocore.config import Config

    from intentbus.adapters.clients import DEFAULT_CONFIG, AwsClients
    from intentbus_cli.sqs_queues import SqsQueues

    # Asked once, without retries: a missing StartMessageMoveTask answers an error at once.
    once = AwsClients(
        config=DEFAULT_CONFIG.merge(Config(retries={"mode": "standard", "max_attempts": 1})),
        endpoint_url=args.endpoint_url,
    )
    return SqsQueues(target.client("sqs"), wait_seconds=args.wait_seconds, task_client=once.client("sqs"))


def _dlq(args: argparse.Namespace) -> int:
    from intentbus_cli import dead_letters

    target = _target(args)
    queues = target.dead_letter_queues(args.queue)
    sqs = _sqs(args, target)
    if args.dlq_command == "list":
        return dead_letters.list_messages(sqs, queues)
    if args.dlq_command == "show":
        return dead_letters.show_message(sqs, queues, args.message_id)
    to = target.queue(args.to, default_logical_id="", what="destination") if args.to else None
    options = dead_letters.RedriveOptions(
        to=to, dry_run=args.dry_run, max_messages=args.max_messages, method=args.method, wait=args.wait
    )
    return dead_letters.redrive(sqs, queues, options)


def _quarantine(args: argparse.Namespace) -> int:
    from intentbus_cli import quarantined

    if args.quarantine_command in ("parked", "repair"):
        return _parked(args)
    target = _target(args)
    queue = target.queue(args.queue, default_logical_id="QuarantineQueue", what="quarantine queue")
    sqs = _sqs(args, target)
    if args.quarantine_command == "list":
        return quarantined.list_messages(sqs, queue)
    if args.quarantine_command == "show":
        return quarantined.show_message(sqs, queue, args.message_id, raw_output=args.raw_output)
    if not args.message_ids and not args.all:
        raise UsageError("name the message ids to resubmit, or pass --all")
    if args.message_ids and args.all:
        raise UsageError("--all resubmits every message: name no message ids with it")
    detail = json.loads(args.detail.read_text()) if args.detail else None
    options = quarantined.ResubmitOptions(
        message_ids=tuple(args.message_ids),
        detail=detail,
        dry_run=args.dry_run,
        max_messages=args.max_messages,
    )
    to = target.queue(args.to, default_logical_id="", what="destination").url if args.to else None
    return quarantined.resubmit(
        sqs, queue, options, lambda stage: to if to is not None else target.stage_queue(stage).url
    )


def _parked(args: argparse.Namespace) -> int:
    from intentbus.adapters.dynamodb_park import DynamoParkStore
    from intentbus.catalog import Catalog
    from intentbus.repair import EventBridgeSubmit
    from intentbus_cli import parked_inputs

    target = _target(args)
    store = DynamoParkStore(target.workflow_table(args.table), target.client("dynamodb"))
    if args.quarantine_command == "parked":
        return parked_inputs.list_parked(store, args.tenant, as_json=args.json)
    parked_inputs.check_arguments(
        payload=args.payload, detail=args.detail, discard=args.discard, reason=args.reason
    )
    bus = args.bus or _stack_output(target, "IngressBusName")
    person = str(target.client("sts").get_caller_identity()["Arn"])
    return parked_inputs.repair(
        store,
        types=Catalog.from_modules(args.workflows).types,
        submit=EventBridgeSubmit(target.client("events"), bus),
        park_id=args.park_id,
        tenant=args.tenant,
        person=person,
        payload=args.payload,
        detail=args.detail,
        discard=args.discard,
        reason=args.reason,
    )


def _stack_output(target: Any, name: str) -> str:
    from intentbus.errors import ConfigurationError

    if target.stack is None:
        raise ConfigurationError(f"no {name}: pass --stack NAME (or set INTENTBUS_STACK)")
    (stack,) = target.client("cloudformation").describe_stacks(StackName=target.stack)["Stacks"]
    for output in stack.get("Outputs", []):
        if output.get("OutputKey") == name and output.get("OutputValue"):
            return str(output["OutputValue"])
    raise ConfigurationError(f"stack {target.stack} has no output {name}")
