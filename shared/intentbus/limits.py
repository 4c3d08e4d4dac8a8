"""The sizes the pipeline holds every message to, so no fact it publishes outgrows AWS's limits.

A PutEvents request (and so each of its entries) may have 256 KB, counted as AWS counts it
(``entry_size``); an SQS message 1 MiB; a DynamoDB item 400 KB. The bounds below keep every fact far
inside them: what a producer sends (the envelope's fields; the payload up to ``MAX_PAYLOAD_BYTES``),
what an agent proposes (rationale, evidence, command payloads) and what a tool returns. A payload over
the claim-check threshold (``INTENTBUS_CLAIM_CHECK_BYTES``) travels by claim check (``intentbus.claims``):
a published entry is then at most the threshold plus the envelope's bounded fields.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from intentbus.ids import canonical_json, compact_json

PUT_EVENTS_LIMIT_BYTES = 256 * 1024
"""A PutEvents request's entries together (and so one entry) may have this many bytes."""
SQS_MESSAGE_LIMIT_BYTES = 1024 * 1024
"""An SQS message's body may have this many bytes (1 MiB since August 2025)."""
TIME_BYTES = 14
"""What an entry's ``Time`` counts toward its size, whatever the time."""

MAX_SUBJECT_CHARS = 1024
"""CloudEvents sets no bound; a subject names the event's subject, it does not carry it."""
MAX_PAYLOAD_BYTES = 192 * 1024
"""An input's payload, as compact JSON in UTF-8: more cannot fit (its facts, a tool's result beside
the command, are recorded in DynamoDB items of at most 400 KB) and is quarantined at validate."""
MAX_RATIONALE_CHARS = 4000
"""A decision's rationale (several proposals' rationales joined)."""
MAX_EVIDENCE_BYTES = 16 * 1024
"""A decision's evidence, as compact JSON; copied onto every command it proposes."""
MAX_DECISION_BYTES = 224 * 1024
"""A decision's command payloads, plus its evidence and rationale once per command, together."""
MAX_RESULT_BYTES = 64 * 1024
"""A tool's result, as compact JSON; a larger one is published as its size and sha256 only."""
MAX_ERROR_CHARS = 2000
"""An error told in a fact (CommandFailed, HumanReviewRequired); a longer one is cut."""

DEFAULT_CLAIM_CHECK_BYTES = 64 * 1024
"""A fact whose PutEvents entry would be larger travels with its payload in the claim-check bucket."""
MIN_CLAIM_CHECK_BYTES = 1024
MAX_CLAIM_CHECK_BYTES = 200 * 1024
"""Above this the envelope's own bounded fields might no longer fit beside the payload."""


def json_bytes(value: Any) -> int:
    """Bytes of ``value`` as compact JSON in UTF-8 (how it is measured against a bound)."""
    if type(value) is dict and not value:  # ``{}``, as a decision's evidence nearly always is
        return 2
    return len(compact_json(value).encode())


def entry_size(entry: Mapping[str, object]) -> int:
    """A PutEvents entry's size as EventBridge calculates it: Time (14 bytes when given), Source,
    DetailType, Detail and each of Resources in UTF-8. ``TraceHeader`` and ``EventBusName`` do not count."""
    size = TIME_BYTES if entry.get("Time") is not None else 0
    for name in ("Source", "DetailType", "Detail"):
        value = entry.get(name)
        if isinstance(value, str):
            size += len(value.encode("utf-8", "surrogatepass"))
    resources = entry.get("Resources")
    for resource in resources if isinstance(resources, list | tuple) else ():
        if isinstance(resource, str):
            size += len(resource.encode("utf-8", "surrogatepass"))
    return size


def cut(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` within ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    note = f" … ({len(text) - limit} more characters cut)"
    return text[: limit - len(note)] + note


def claim_check_threshold(settings: dict[str, str]) -> int:
    """``INTENTBUS_CLAIM_CHECK_BYTES`` within its bounds (the default when unset or not a number)."""
    raw = settings.get("INTENTBUS_CLAIM_CHECK_BYTES", "")
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_CLAIM_CHECK_BYTES
    return min(max(value, MIN_CLAIM_CHECK_BYTES), MAX_CLAIM_CHECK_BYTES)


def bounded_result(result: dict[str, Any]) -> dict[str, Any]:
    """A tool's result as published: itself within ``MAX_RESULT_BYTES``, else its size and sha256.

    The tool has run by then; the fact says so, and says the result was too large to carry."""
    size = json_bytes(result)
    if size <= MAX_RESULT_BYTES:
        return result
    return {
        "result_omitted": f"the tool's result is {size:,} bytes as JSON, over the {MAX_RESULT_BYTES:,} "
        "a published result may have",
        "result_bytes": size,
        "result_sha256": hashlib.sha256(canonical_json(result).encode()).hexdigest(),
    }
