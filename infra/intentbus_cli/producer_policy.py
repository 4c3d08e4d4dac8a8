"""``intentbus producer policy``: one producer's least-privilege IAM policy and its ProducerBindings entry.

A producer may put on the ingress bus only, and only with its own ``source`` (an ``events:source``
condition); which tenants that source may send for is the deployment's ``ProducerBindings``. The
policy JSON goes to standard output (ready for ``aws iam create-policy --policy-document``), the
entry to add to ``ProducerBindings`` to standard error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, TypeVar

from intentbus.envelope import TENANT_PATTERN
from intentbus.errors import ConfigurationError
from intentbus.facts import PIPELINE_SOURCE, WORKFLOW_SOURCE
from intentbus.producers import ANY, ProducerBindings

INGRESS_OUTPUT = "IngressBusArn"
RESERVED_SOURCES = (PIPELINE_SOURCE, WORKFLOW_SOURCE)
_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-/]{0,255}$")
_TENANT = re.compile(TENANT_PATTERN)
_BUS_ARN = re.compile(r"^arn:aws[a-z\-]*:events:[a-z0-9\-]+:[0-9]{12}:event-bus/[A-Za-z0-9._\-]{1,256}$")

_P = TypeVar("_P", bound=argparse.ArgumentParser)


def policy(source: str, ingress_bus_arn: str) -> dict[str, Any]:
    """PutEvents on the ingress bus, with ``source`` as every entry's Source: nothing else."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "PutOwnEventsOnTheIntentbusIngress",
                "Effect": "Allow",
                "Action": "events:PutEvents",
                "Resource": ingress_bus_arn,
                "Condition": {"StringEquals": {"events:source": source}},
            }
        ],
    }


def binding(source: str, tenants: Sequence[str]) -> str:
    """The ``ProducerBindings`` entry binding ``source`` (of the stack's account) to ``tenants``."""
    entry = f"{source}={'|'.join(dict.fromkeys(tenants))}"
    ProducerBindings.parse(entry)  # the deployment's own parser must read it back
    return entry


# ---------------------------------------------------------------------------------------- arguments


def source_argument(text: str) -> str:
    if not _SOURCE.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a source (letters, digits and . _ - /, up to 256, e.g. monitoring.example)"
        )
    if text in RESERVED_SOURCES or text.startswith("aws."):
        raise argparse.ArgumentTypeError(f"{text!r} is reserved (the pipeline's or AWS's own)")
    return text


def tenant_argument(text: str) -> str:
    if text != ANY and not _TENANT.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a tenant id ({TENANT_PATTERN})")
    return text


def bus_arn_argument(text: str) -> str:
    if not _BUS_ARN.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an event bus ARN (arn:aws:events:REGION:ACCOUNT:event-bus/NAME)"
        )
    return text


def add_parser(commands: argparse._SubParsersAction[_P]) -> None:
    """Registers ``producer policy`` on the ``intentbus`` parser."""
    producer = commands.add_parser("producer", help="what a producer needs: its IAM policy")
    actions = producer.add_subparsers(dest="producer_command", required=True, parser_class=type(producer))
    command = actions.add_parser(
        "policy",
        help="print a producer's least-privilege IAM policy (stdout) and its ProducerBindings entry (stderr)",
    )
    command.add_argument(
        "--source",
        required=True,
        type=source_argument,
        help="the EventBridge source the producer sends as",
    )
    command.add_argument(
        "--tenant",
        required=True,
        action="append",
        type=tenant_argument,
        help="a tenant the source may send for (repeat for more; '*' any tenant, unsafe)",
    )
    where = command.add_mutually_exclusive_group()
    where.add_argument("--ingress-bus-arn", type=bus_arn_argument, help="the stack's IngressBusArn output")
    where.add_argument(
        "--stack",
        default=os.environ.get("INTENTBUS_STACK"),
        help="read IngressBusArn from this stack's outputs (default: $INTENTBUS_STACK)",
    )
    command.add_argument("--endpoint-url", help="another endpoint, e.g. a moto server")


# ---------------------------------------------------------------------------------------- running


def run(args: argparse.Namespace) -> int:
    arn: str | None = args.ingress_bus_arn
    if arn is None and not args.stack:
        print(
            "intentbus producer policy: pass --ingress-bus-arn ARN or --stack NAME (or set INTENTBUS_STACK)",
            file=sys.stderr,
        )
        return 2
    if arn is None:
        arn = stack_ingress_bus_arn(args.stack, endpoint_url=args.endpoint_url)
    entry = binding(args.source, args.tenant)
    print(json.dumps(policy(args.source, arn), indent=2))
    print(f"add to the stack's ProducerBindings (entries separated by ';'): {entry}", file=sys.stderr)
    if ANY in args.tenant:
        print("warning: '*' lets this source send for every tenant", file=sys.stderr)
    return 0


def stack_ingress_bus_arn(stack: str, *, endpoint_url: str | None) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    from intentbus.adapters.clients import AwsClients

    try:
        described = (
            AwsClients(endpoint_url=endpoint_url).client("cloudformation").describe_stacks(StackName=stack)
        )
    except (BotoCoreError, ClientError) as error:
        raise ConfigurationError(f"cannot read stack {stack}: {error}") from None
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in described["Stacks"][0].get("Outputs", [])}
    arn = outputs.get(INGRESS_OUTPUT)
    if not arn:
        raise ConfigurationError(
            f"stack {stack} has no {INGRESS_OUTPUT} output (deployed before the ingress bus?)"
        )
    return str(arn)
