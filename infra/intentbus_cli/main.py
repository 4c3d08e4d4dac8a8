"""intentbus: run the demo, run events on the local cloud, emit to a bus, export schemas, operate a stack."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from intentbus_cli import ops, project
from intentbus_cli.desks import Target, add_target_arguments
from intentbus_cli.failures import explain


class _Parser(argparse.ArgumentParser):
    """Bad arguments get one line that says what is wrong and where to look."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="intentbus", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = commands.add_parser(
        "demo", help="run the incident workflow on the local cloud and print its timeline"
    )
    demo.add_argument(
        "--mode",
        choices=("server", "inprocess"),
        default="server",
        help="moto as a local server on 127.0.0.1 (default) or inside this process",
    )
    demo.add_argument(
        "--environment",
        choices=("production", "dev"),
        default="production",
        help="production (default) waits for an approval before scaling; dev does not",
    )
    decision = demo.add_mutually_exclusive_group()
    decision.add_argument(
        "--approve",
        dest="decision",
        action="store_const",
        const="approve",
        help="approve the scale-up without asking",
    )
    decision.add_argument(
        "--reject",
        dest="decision",
        action="store_const",
        const="reject",
        help="reject the scale-up without asking",
    )

    local = commands.add_parser("local", help="the local cloud: template.yaml on moto")
    local_commands = local.add_subparsers(dest="local_command", required=True, parser_class=_Parser)
    run = local_commands.add_parser(
        "run", help="emit events, run until nothing is in flight, report where each ended"
    )
    run.add_argument("--events", type=Path, required=True, help="JSON lines of envelopes or CloudEvents")
    run.add_argument("--report", type=Path, help="also write the report as JSON to this file")
    run.add_argument(
        "--mode",
        choices=("server", "inprocess"),
        help="where moto runs: in this process (default) or as a local server (default with --built)",
    )
    run.add_argument(
        "--built",
        nargs="?",
        type=Path,
        const=Path(".aws-sam/build"),
        metavar="BUILD_DIR",
        help="run what 'make build' built (default .aws-sam/build), each function in its own process, "
        "instead of the source tree",
    )
    run.add_argument(
        "--environment", default="dev", help="the template's Environment parameter (default dev)"
    )
    run.add_argument(
        "--seed-demo",
        action="store_true",
        help="first create the demo's ECS service and the CloudWatch metrics the incident workflow reads",
    )
    run.add_argument(
        "--redeploy",
        action="append",
        type=_parameter,
        default=[],
        metavar="NAME=VALUE",
        help="once the events ran, redeploy the stack with this parameter changed (repeatable)",
    )
    run.add_argument(
        "--redeploy-template",
        type=Path,
        help="once the events ran, redeploy the stack with this template (its CodeUri paths from its folder)",
    )
    run.add_argument(
        "--then-events", type=Path, help="events to emit after the redeploy (JSON lines, like --events)"
    )
    run.add_argument(
        "--ingress",
        choices=("bus", "rabbitmq"),
        default="bus",
        help="how the events enter: the ingress bus (default), or a real RabbitMQ through the template's "
        "Amazon MQ mapping",
    )
    run.add_argument(
        "--rabbitmq-url",
        metavar="URL",
        help="the RabbitMQ to use with --ingress rabbitmq (amqp://user:password@host:port/); by default "
        "one is started on a free port and stopped after",
    )

    from intentbus_cli import emit

    emit.add_parser(commands)  # emit, with the producer client
    from intentbus_cli import faults

    faults.add_parser(commands)  # faults: seeded fault schedules over the user's workflows

    approvals = commands.add_parser("approvals", help="pending approvals: list, show, approve, reject")
    add_target_arguments(approvals, tenant_help="the tenant whose approvals to act on")
    approval_commands = approvals.add_subparsers(
        dest="approvals_command", required=True, parser_class=_Parser
    )
    approval_commands.add_parser("list", help="pending approvals, soonest expiry first")
    for name in ("show", "approve", "reject"):
        command = approval_commands.add_parser(name, help=f"{name} one approval")
        command.add_argument("approval_id")
        if name != "show":
            command.add_argument("--reason", default="", required=name == "reject")

    from intentbus_cli import review

    review.add_parser(commands)

    from intentbus_cli import producer_policy

    producer_policy.add_parser(commands)  # producer policy

    from intentbus_cli import users

    users.add_parser(commands)  # users add|list

    ops.add_commands(commands)  # runs, dlq, quarantine

    schema = commands.add_parser("schema", help="JSON Schema of every registered type")
    schema_commands = schema.add_subparsers(dest="schema_command", required=True, parser_class=_Parser)
    export = schema_commands.add_parser("export", help="write one <type>.schema.json per type")
    export.add_argument("--out", type=Path, default=Path("schemas"))

    project.add_project_arguments(parser)  # --template and --workflows on every command above

    from intentbus_cli import init

    init.add_parser(commands)  # init: a new project, so no project options
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "built", None) is not None and args.mode == "inprocess":
        parser.error("--built runs each function in a process of its own: it needs --mode server")
    try:
        if args.command == "init":
            from intentbus_cli import init

            return init.run(args)
        found = project.resolve(getattr(args, "template", None), getattr(args, "workflows", None))
        args.template, args.workflows = found.template, found.workflows
        return _dispatch(args, found)
    except (Exception, KeyboardInterrupt) as error:
        failure = explain(error)
        if failure is None:
            raise
        print(failure.line, file=sys.stderr)
        return int(failure.status)


def _dispatch(args: argparse.Namespace, found: project.Project) -> int:
    if args.command == "schema":
        from intentbus.catalog import Catalog
        from intentbus_cli.schema import export

        written = export(Catalog.from_modules(args.workflows), args.out)
        print(f"wrote {len(written)} schemas to {args.out}/")
        return 0
    if args.command == "emit":
        from intentbus_cli import emit

        return emit.run(args)
    if args.command == "faults":
        from intentbus_cli import faults

        return faults.run(args, seeded=found.seeded)
    if args.command == "approvals":
        return _approvals(args)
    if args.command in ops.COMMANDS:
        return ops.dispatch(args)
    if args.command == "review":
        from intentbus_cli import review

        return review.run(args)
    if args.command == "producer":
        from intentbus_cli import producer_policy

        return producer_policy.run(args)
    if args.command == "users":
        from intentbus_cli import users

        return users.run(args)
    from intentbus_cli import local

    if args.command == "demo":
        return local.demo(found, mode=args.mode, environment=args.environment, decision=args.decision)
    if args.then_events is not None and not (args.redeploy or args.redeploy_template):
        print("intentbus: --then-events needs --redeploy or --redeploy-template", file=sys.stderr)
        return 2
    if args.ingress == "rabbitmq" and (args.built is not None or args.redeploy or args.redeploy_template):
        print(
            "intentbus: --ingress rabbitmq runs the source tree once: no --built or --redeploy",
            file=sys.stderr,
        )
        return 2
    return local.run_events(
        found,
        args.events,
        report=args.report,
        mode=args.mode or ("server" if args.built is not None else "inprocess"),
        environment=args.environment,
        seed_demo=args.seed_demo,
        built=args.built,
        redeploy=dict(args.redeploy),
        redeploy_template=args.redeploy_template,
        then_events=args.then_events,
        ingress=args.ingress,
        rabbitmq_url=args.rabbitmq_url,
    )


def _parameter(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not name or not equals:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _approvals(args: argparse.Namespace) -> int:
    from intentbus_cli import approvals

    desk, clients = approvals.desk(Target.from_args(args))
    if args.approvals_command == "list":
        pending = desk.pending(args.tenant)
        for approval in pending:
            print(approvals.summary(approval))
        print(f"{len(pending)} pending approval(s) for {args.tenant}")
        return 0
    if args.approvals_command == "show":
        found = desk.show(args.tenant, args.approval_id)
        if found is None:
            print(f"intentbus: no approval {args.approval_id} for tenant {args.tenant}", file=sys.stderr)
            return 1
        print(approvals.detail(found))
        return 0
    result = desk.decide(
        tenant_id=args.tenant,
        approval_id=args.approval_id,
        approver=approvals.caller(clients, args.tenant),
        approve=args.approvals_command == "approve",
        reason=args.reason,
    )
    print(approvals.answer_line(result))
    return 0 if result.http_status == 200 else 1


if __name__ == "__main__":
    raise SystemExit(main())
