"""``intentbus quarantine``: malformed input with its reason; show one; resubmit it, repaired or as it was.

A quarantine message (adapters/sqs_quarantine.py) holds the stage that refused it, the reason, the
field, the original message id and the original SQS body: the EventBridge event as that stage's queue
got it. Resubmitting sends that body (its ``detail`` replaced by a repaired envelope with
``--detail``) back to the same stage's queue, not to the bus, so other subscribers of the bus do not
see the event twice; then deletes it from the quarantine (send first, then delete: an interrupted
resubmit leaves a duplicate, never a loss). The resubmitted message names its origin in message
attributes: ``intentbus.resubmitted_from`` (the quarantine message id) and
``intentbus.original_message_id``.

A decision the agent could not make valid also holds the model's output (``raw_output``): ``show``
prints it only with ``--raw-output``, since it may hold anything the model wrote; its size and sha256
are always shown. ``list`` shows reasons, which never carry it. A resubmit sends the body alone.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from intentbus_cli import bodies, tables
from intentbus_cli.dead_letters import ProgressLines, summary_line
from intentbus_cli.failures import UsageError
from intentbus_cli.queue_moves import Outgoing, Progress, QueuedMessage, QueuePort, Step, move_messages, peek
from intentbus_cli.sqs_queues import SqsQueues
from intentbus_cli.targets import Queue

RAW_OUTPUT_HIDDEN = "[hidden: the model's own output; --raw-output shows it]"
RESUBMITTED_FROM = "intentbus.resubmitted_from"
ORIGINAL_MESSAGE_ID = "intentbus.original_message_id"


@dataclass(frozen=True)
class Quarantined:
    message: QueuedMessage
    record: dict[str, Any]

    @property
    def stage(self) -> str:
        return str(self.record.get("stage") or "-")

    @property
    def reason(self) -> str:
        return str(self.record.get("reason") or "-")

    @property
    def resubmittable(self) -> str | None:
        """Why it cannot be resubmitted, or None."""
        if not self.record:
            return "not a quarantine record"
        if self.record.get("body_truncated"):
            return "its body was cut to fit the quarantine message"
        if not isinstance(bodies.parse(str(self.record.get("body", ""))), dict):
            return "its body is not an EventBridge event"
        return None


def quarantined(message: QueuedMessage) -> Quarantined:
    record = bodies.parse(message.body)
    return Quarantined(message, record if isinstance(record, dict) else {})


def list_messages(sqs: SqsQueues, queue: Queue) -> int:
    found = [quarantined(message) for message in peek(sqs, queue.url)]
    rows = [
        (
            item.message.message_id,
            str(item.record.get("quarantined_at") or bodies.sent_at(item.message)),
            item.stage,
            bodies.event_facts(str(item.record.get("body", ""))).type,
            str(item.record.get("field") or "-"),
            item.reason,
        )
        for item in found
    ]
    tables.show(("message id", "quarantined", "stage", "type", "field", "reason"), rows)
    print(f"{len(rows)} quarantined message(s) in {queue.name}")
    return 0


def show_message(sqs: QueuePort, queue: Queue, message_id: str, *, raw_output: bool = False) -> int:
    """The message in full; a model's ``raw_output`` only when asked for (its size and hash always)."""
    for message in peek(sqs, queue.url):
        if message.message_id == message_id:
            item = quarantined(message)
            shown = bodies.as_json(message, queue.name, resubmittable=item.resubmittable or "yes")
            if item.record:
                record = {**item.record, "body": _parsed(item.record.get("body"))}
                if "raw_output" in record:
                    record["raw_output"] = _parsed(record["raw_output"]) if raw_output else RAW_OUTPUT_HIDDEN
                shown["body"] = record
            print(json.dumps(shown, indent=2, sort_keys=True))
            return 0
    print(f"intentbus: no message {message_id} in {queue.name}", file=sys.stderr)
    return 1


def _parsed(text: Any) -> Any:
    inner = bodies.parse(str(text if text is not None else ""))
    return inner if inner is not None else text


@dataclass
class ResubmitOptions:
    message_ids: Sequence[str] = ()
    """Empty: every message (the caller asked for --all)."""
    detail: dict[str, Any] | None = None
    """A repaired envelope for the one message named."""
    dry_run: bool = False
    max_messages: int | None = None
    skipped: dict[str, str] = field(default_factory=dict)


def resubmit_plan(
    options: ResubmitOptions, destination: Callable[[str], str]
) -> Callable[[QueuedMessage], Outgoing | None]:
    """``destination`` maps the refusing stage to its queue URL."""
    wanted = set(options.message_ids)

    def plan(message: QueuedMessage) -> Outgoing | None:
        if wanted and message.message_id not in wanted:
            return None
        item = quarantined(message)
        why = item.resubmittable
        if why is not None:
            options.skipped[message.message_id] = why
            return None
        event = bodies.parse(str(item.record["body"]))
        if options.detail is not None:
            event["detail"] = options.detail
        attributes = {
            RESUBMITTED_FROM: {"DataType": "String", "StringValue": message.message_id},
        }
        original = item.record.get("source_message_id")
        if original:
            attributes[ORIGINAL_MESSAGE_ID] = {"DataType": "String", "StringValue": str(original)}
        return Outgoing(destination(item.stage), json.dumps(event), attributes)

    return plan


def resubmit(
    sqs: SqsQueues,
    queue: Queue,
    options: ResubmitOptions,
    destination: Callable[[str], str],
) -> int:
    if options.detail is not None and len(options.message_ids) != 1:
        raise UsageError("--detail repairs one message: name exactly one message id")
    expected = len(options.message_ids) or sqs.depth(queue.url).visible
    lines = ProgressLines(queue.name, expected)

    def tell(progress: Progress) -> None:
        if progress.step is Step.MOVED:
            facts = bodies.event_facts(progress.outgoing.body if progress.outgoing else "")
            target = progress.outgoing.queue_url.rsplit("/", 1)[-1] if progress.outgoing else "?"
            print(f"{queue.name}: resubmitted {progress.message.message_id} {facts.type} to {target}")
        elif progress.step is not Step.SKIPPED:
            lines(progress)

    report = move_messages(
        sqs,
        queue.url,
        resubmit_plan(options, destination),
        dry_run=options.dry_run,
        max_messages=options.max_messages,
        on_progress=tell,
    )
    print(summary_line(queue.name, report, verb="resubmitted", would="would resubmit"))
    for message_id, why in options.skipped.items():
        print(f"{queue.name}: left {message_id}: {why}")
    missing = [m for m in options.message_ids if m not in report.moved_ids and m not in options.skipped]
    for message_id in missing:
        print(f"intentbus: no message {message_id} in {queue.name}", file=sys.stderr)
    return 1 if missing or options.skipped or not report.complete else 0
