"""Publishing to EventBridge: batched PutEvents, failed entries retried with backoff, never dropped.

Every entry carries the publisher's trace context (intentbus.spans): on the envelope as its
``traceparent`` and on the entry as its X-Ray ``TraceHeader``, which EventBridge hands to the target
queue, so the next stage runs in the same trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from intentbus import spans
from intentbus.backoff import backoff_seconds
from intentbus.claims import detail_json
from intentbus.envelope import Envelope
from intentbus.errors import PublishError
from intentbus.limits import PUT_EVENTS_LIMIT_BYTES, entry_size
from intentbus.telemetry import trace_header

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient

__all__ = [
    "MAX_ENTRIES_PER_CALL",
    "MAX_REQUEST_BYTES",
    "EventBridgeBus",
    "backoff_seconds",
    "chunks",
    "to_entry",
]
"""``backoff_seconds`` lives in ``intentbus.backoff`` (shared with the producer client)."""

MAX_ENTRIES_PER_CALL = 10
MAX_REQUEST_BYTES = PUT_EVENTS_LIMIT_BYTES


def to_entry(envelope: Envelope, bus_name: str, *, header: str | None = None) -> dict[str, Any]:
    """The PutEvents entry of ``envelope``; ``header``: its ``TraceHeader``, by default the workflow's."""
    return {
        "Source": envelope.source,
        "DetailType": envelope.type,
        "Detail": detail_json(envelope),
        "EventBusName": bus_name,
        "Time": envelope.time,
        "Resources": [],
        "TraceHeader": header or trace_header(envelope.trace_id),
    }


def chunks(entries: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    batches: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for entry in entries:
        size_of_entry = entry_size(entry)
        if current and (len(current) == MAX_ENTRIES_PER_CALL or size + size_of_entry > MAX_REQUEST_BYTES):
            batches.append(current)
            current, size = [], 0
        current.append(entry)
        size += size_of_entry
    if current:
        batches.append(current)
    return batches


class EventBridgeBus:
    def __init__(
        self,
        bus_name: str,
        client: EventBridgeClient,
        *,
        max_attempts: int = 5,
        base_delay: float = 0.05,
        max_delay: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._bus = bus_name
        self._client = client
        self._max_attempts = max_attempts
        self._base = base_delay
        self._cap = max_delay
        self._sleep = sleep

    def publish(self, envelopes: Sequence[Envelope]) -> None:
        with spans.active().publish(self._bus, envelopes) as stamp:
            entries = [to_entry(out, self._bus, header=header) for out, header in map(stamp, envelopes)]
            for batch in chunks(entries):
                self._put(batch)

    def _put(self, entries: list[dict[str, Any]]) -> None:
        pending = entries
        errors: list[str] = []
        for attempt in range(self._max_attempts):
            if attempt:
                self._sleep(backoff_seconds(attempt - 1, base=self._base, cap=self._cap))
            response = self._client.put_events(Entries=pending)  # type: ignore[arg-type]
            if not response.get("FailedEntryCount"):
                return
            results = response["Entries"]
            errors = [
                f"{result.get('ErrorCode')}: {result.get('ErrorMessage')}"
                for result in results
                if "ErrorCode" in result
            ]
            pending = [entry for entry, result in zip(pending, results, strict=True) if "ErrorCode" in result]
        raise PublishError(
            f"{len(pending)} entries not accepted after {self._max_attempts} attempts: {errors[:3]}"
        )
