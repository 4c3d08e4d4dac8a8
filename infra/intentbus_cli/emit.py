"""``intentbus emit``: put envelopes on the ingress bus with the producer client, as any other system would.

Every envelope is checked against the workflow catalog's types first (``intentbus.producer``): one
that validate would quarantine is refused here, with its file and line, and never sent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from intentbus.errors import ConfigurationError

if TYPE_CHECKING:
    from intentbus.producer import SendReport

DEFAULT_SOURCE = "intentbus.cli"
BUS_VARIABLE = "INGRESS_BUS_NAME"

_P = TypeVar("_P", bound=argparse.ArgumentParser)


class InputError(ValueError):
    pass


@dataclass(frozen=True)
class Line:
    """One envelope read from a file: where it was (``file:line``), and its value or why it has none."""

    where: str
    value: Any = None
    problem: str | None = None


def read_envelopes(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """JSON lines, or one JSON document (an array of objects); the first bad line raises ``InputError``.

    (``intentbus local run`` reads its events with this.)"""
    text = path.read_text()
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            documents = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}: not JSON ({error.msg}, line {error.lineno})") from None
        if not isinstance(documents, list):
            raise InputError(f"{path}: expected a JSON array of objects")
        for index, document in enumerate(documents):
            if not isinstance(document, dict):
                raise InputError(f"{path}[{index}]: expected a JSON object, not {type(document).__name__}")
        yield from enumerate(documents, start=1)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}:{number}: not JSON ({error.msg})") from None
        if not isinstance(value, dict):
            raise InputError(f"{path}:{number}: expected a JSON object")
        yield number, value


def read_lines(path: Path, *, name: str | None = None) -> list[Line]:
    """JSON lines, or one JSON document (an object, or an array of objects), for ``emit``.

    A line that is not JSON is a ``Line`` with its ``problem`` (the producer refuses what is not an
    object); only an unreadable or empty file raises."""
    shown = name or str(path)
    text = path.read_text()
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None
    else:
        if isinstance(document, list):
            return [Line(f"{shown}[{index}]", value) for index, value in enumerate(document)]
        if isinstance(document, dict):
            return [Line(f"{shown}:1", document)]
    lines: list[Line] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{shown}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            lines.append(Line(where, problem=f"not JSON ({error.msg})"))
            continue
        lines.append(Line(where, value))
    if not lines:
        raise InputError(f"{shown}: no envelopes in it")
    return lines


def add_parser(commands: argparse._SubParsersAction[_P]) -> None:
    """Registers ``emit`` on the ``intentbus`` parser."""
    emit = commands.add_parser(
        "emit", help="put envelopes on the ingress bus, checked against the workflows' types first"
    )
    emit.add_argument("file", type=Path, help="JSON lines of envelopes (or - for standard input)")
    emit.add_argument(
        "--bus",
        default=os.environ.get(BUS_VARIABLE),
        help=f"the ingress bus name (default: ${BUS_VARIABLE}; see the stack's IngressBusName output)",
    )
    emit.add_argument(
        "--source",
        default=DEFAULT_SOURCE,
        help="the EventBridge source to send as, the one your IAM policy pins (default intentbus.cli); "
        "an envelope claiming another source is refused",
    )
    emit.add_argument("--endpoint-url", help="another endpoint, e.g. a moto server")


def run(args: argparse.Namespace) -> int:
    """Validate, send, print one line per refused envelope and a summary; 1 if any was refused."""
    import boto3

    from intentbus.catalog import Catalog
    from intentbus.producer import Producer

    if not args.bus:
        raise ConfigurationError(
            f"no bus: pass --bus or set {BUS_VARIABLE} (the stack's IngressBusName output)"
        )
    stdin = str(args.file) == "-"
    lines = read_lines(Path("/dev/stdin") if stdin else args.file, name="<stdin>" if stdin else None)
    catalog = Catalog.from_modules(args.workflows)
    client = boto3.client("events", endpoint_url=args.endpoint_url)  # no region: one line, by main
    producer = Producer(client, args.bus, source=args.source, types=catalog.types)
    readable = [number for number, line in enumerate(lines) if line.problem is None]
    report = producer.send(lines[number].value for number in readable)  # SendError: one line, by main
    refusals = {number: line.problem for number, line in enumerate(lines) if line.problem is not None}
    refusals.update({readable[item.index]: item.reason for item in report.refused})
    for number in sorted(refusals):
        print(f"{lines[number].where}: {refusals[number]}", file=sys.stderr)
    print(summary(report, total=len(lines), bus=args.bus, refused=len(refusals)))
    return 1 if refusals else 0


def summary(report: SendReport, *, total: int, bus: str, refused: int) -> str:
    text = f"emitted {len(report.accepted)} of {total} events to {bus}"
    return text + (f"; {refused} refused" if refused else "")
