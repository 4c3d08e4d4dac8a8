"""``intentbus dlq``: what is in the dead-letter queues, one message in full, and redrive.

A stage's DLQ message carries no error (SQS moved it after maxReceiveCount failed receives): the
error is in the stage function's log under the message id. EventBridge's delivery DLQ does carry
one (``ERROR_CODE`` / ``ERROR_MESSAGE`` attributes), shown when present.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass

from intentbus.errors import ConfigurationError
from intentbus_cli import bodies, tables
from intentbus_cli.progress import Progress as Bar
from intentbus_cli.queue_moves import (
    MoveReport,
    MoveTaskUnsupported,
    Outgoing,
    Progress,
    QueuedMessage,
    Step,
    TaskStatus,
    move_messages,
    peek,
    run_move_task,
)
from intentbus_cli.sqs_queues import SqsQueues
from intentbus_cli.targets import Queue

LINEAGE = "intentbus.redriven_from"
SQS_MAX_ATTRIBUTES = 10
Method = str  # "auto", "task" or "move"


def error_of(message: QueuedMessage) -> str:
    code = bodies.string_attribute(message, "ERROR_CODE")
    text = bodies.string_attribute(message, "ERROR_MESSAGE")
    return ": ".join(part for part in (code, text) if part) or "-"


def list_messages(sqs: SqsQueues, queues: list[Queue]) -> int:
    rows: list[tuple[str, ...]] = []
    counts: list[str] = []
    with Bar("dlq list", total=len(queues), unit="queues read") as progress:
        found_in = []
        for queue in queues:
            progress.update(detail=f"reading {queue.name}")
            found_in.append((queue, peek(sqs, queue.url)))
            progress.update(advance=1, detail="")
    for queue, found in found_in:
        counts.append(f"{queue.name} {len(found)}")
        for message in found:
            facts = bodies.event_facts(message.body)
            rows.append(
                (
                    queue.name,
                    message.message_id,
                    message.attributes.get("ApproximateReceiveCount", "-"),
                    bodies.sent_at(message),
                    facts.type,
                    facts.tenant_id,
                    facts.run_id,
                    facts.event_id,
                    error_of(message),
                )
            )
    tables.show(("dlq", "message id", "receives", "sent", "type", "tenant", "run", "event id", "error"), rows)
    print(f"{len(rows)} message(s): " + ", ".join(counts))
    if rows:
        print("a stage DLQ keeps no error: find the message id in that stage function's log")
    return 0


def show_message(sqs: SqsQueues, queues: list[Queue], message_id: str) -> int:
    for queue in queues:
        for message in peek(sqs, queue.url):
            if message.message_id == message_id:
                shown = bodies.as_json(message, queue.name, error=error_of(message))
                print(json.dumps(shown, indent=2, sort_keys=True))
                return 0
    names = ", ".join(queue.name for queue in queues)
    print(f"intentbus: no message {message_id} in {names}", file=sys.stderr)
    return 1


@dataclass(frozen=True)
class RedriveOptions:
    to: Queue | None = None
    dry_run: bool = False
    max_messages: int | None = None
    method: Method = "auto"
    wait: bool = True


def lineage_plan(queue: Queue, destination_url: str) -> Callable[[QueuedMessage], Outgoing]:
    """Each message as it was, to ``destination_url``, naming the DLQ message it came from."""

    def plan(message: QueuedMessage) -> Outgoing:
        attributes = dict(message.message_attributes)
        if LINEAGE in attributes or len(attributes) < SQS_MAX_ATTRIBUTES:
            attributes[LINEAGE] = {"DataType": "String", "StringValue": f"{queue.name}/{message.message_id}"}
        return Outgoing(destination_url, message.body, attributes)

    return plan


def redrive(sqs: SqsQueues, queues: list[Queue], options: RedriveOptions) -> int:
    """Each DLQ in turn; ``max_messages`` counts across all of them."""
    incomplete = 0
    remaining = options.max_messages
    for queue in queues:
        depth = sqs.depth(queue.url)
        if depth.visible == 0 and depth.in_flight == 0:
            print(f"{queue.name}: ~0 message(s)")
            continue
        destination = options.to.url if options.to else _source_of(sqs, queue)
        if destination is None:
            print(f"{queue.name}: ~{depth.visible} message(s), but no queue redrives to it: pass --to QUEUE")
            incomplete += 1
            continue
        where = options.to.name if options.to else destination.rsplit("/", 1)[-1]
        print(f"{queue.name}: ~{depth.visible} message(s) -> {where}")
        if remaining == 0:
            continue
        if _use_task(options) and _moved_by_task(sqs, queue, options):
            continue
        with Bar(f"{queue.name} -> {where}", total=depth.visible, unit="messages") as bar:
            report = move_messages(
                sqs,
                queue.url,
                lineage_plan(queue, destination),
                dry_run=options.dry_run,
                max_messages=remaining,
                on_progress=ProgressLines(queue.name, depth.visible, bar=bar),
            )
        print(summary_line(queue.name, report))
        incomplete += not report.complete
        if remaining is not None:
            remaining -= report.moved
    return 1 if incomplete else 0


def _source_of(sqs: SqsQueues, queue: Queue) -> str | None:
    sources = sqs.dead_letter_sources(queue.url)
    if len(sources) > 1:
        raise ConfigurationError(f"{queue.name} is the DLQ of {len(sources)} queues: pass --to QUEUE")
    return sources[0] if sources else None


def _use_task(options: RedriveOptions) -> bool:
    if options.method == "move":
        return False
    if options.dry_run or options.max_messages is not None:
        if options.method == "task":
            raise ConfigurationError(
                "SQS's move task moves everything: --dry-run and --max need --method move"
            )
        return False
    return True


def _moved_by_task(sqs: SqsQueues, queue: Queue, options: RedriveOptions) -> bool:
    """True when SQS's own move task did it; False (after saying so) when it is not available here."""
    destination_arn = sqs.queue_arn(options.to.url) if options.to else None
    try:
        status = run_move_task(
            sqs,
            sqs.queue_arn(queue.url),
            destination_arn,
            wait=options.wait,
            on_status=lambda s: print(task_line(queue.name, s)),
        )
    except MoveTaskUnsupported as error:
        if options.method == "task":
            raise ConfigurationError(str(error)) from error
        print(f"{queue.name}: no StartMessageMoveTask here; moving message by message")
        return False
    if status.status == "FAILED":
        raise ConfigurationError(f"{queue.name}: the move task failed: {status.failure_reason}")
    return True


def task_line(name: str, status: TaskStatus) -> str:
    of = f"/{status.to_move}" if status.to_move is not None else ""
    return f"{name}: move task {status.status}, {status.moved}{of} moved"


class ProgressLines:
    """One line per message in a dry run, and every failure; the count moved on ``bar``, and as a line
    per ten moved where there is no bar or it is not on a terminal."""

    def __init__(self, name: str, expected: int, *, bar: Bar | None = None) -> None:
        self._name = name
        self._expected = expected
        self._bar = bar

    def __call__(self, progress: Progress) -> None:
        message = progress.message
        facts = bodies.event_facts(message.body)
        if progress.step is Step.WOULD_MOVE:
            self._say(f"would move {message.message_id} {facts.type} run {facts.run_id}")
        elif progress.step is Step.MOVED:
            if self._bar is not None:
                self._bar.update(done=progress.moved, total=max(self._expected, progress.moved))
            on_bar = self._bar is not None and self._bar.on_terminal
            if not on_bar and (progress.moved % 10 == 0 or progress.moved == self._expected):
                self._say(f"moved {progress.moved}/~{self._expected}")
        elif progress.step is Step.FAILED:
            self._say(f"could not send {message.message_id}: left in place")
        elif progress.step is Step.SENT_NOT_DELETED:
            self._say(f"sent {message.message_id} but could not delete it: it will be moved again (deduped)")

    def _say(self, line: str) -> None:
        print(f"{self._name}: {line}", flush=True)


def summary_line(name: str, report: MoveReport, *, verb: str = "moved", would: str = "would move") -> str:
    parts = [f"{name}: {would if report.dry_run else verb} {report.moved}"]
    if report.skipped:
        parts.append(f"skipped {report.skipped}")
    if report.failed:
        parts.append(f"{report.failed} could not be sent (still there; run it again)")
    if report.sent_not_deleted:
        parts.append(f"{report.sent_not_deleted} sent but not deleted (will arrive twice; deduped)")
    return ", ".join(parts)
