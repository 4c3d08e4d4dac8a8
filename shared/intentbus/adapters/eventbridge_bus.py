"""Publishing to EventBridge: batched PutEvents, failed entries retried with backoff, never dropped.

With an ``Outbox`` (intentbus.outbox) open, ``publish`` only holds the entries; ``send_held`` then sends a
whole batch's facts in as few requests as AWS allows (10 entries, 256 KB) and names the records whose
entries were not all accepted.

Every entry carries the publisher's trace context (intentbus.spans): on the envelope as its
``traceparent`` and on the entry as its X-Ray ``TraceHeader``, which EventBridge hands to the target
queue, so the next stage runs in the same trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from intentbus import spans
from intentbus.backoff import backoff_seconds
from intentbus.claims import detail_json
from intentbus.envelope import Envelope
from intentbus.errors import PublishError
from intentbus.limits import PUT_EVENTS_LIMIT_BYTES, entry_size
from intentbus.outbox import Outbox
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
    return [[entries[index] for index in request] for request in request_indexes(entries)]


def request_indexes(entries: Sequence[dict[str, Any]]) -> list[list[int]]:
    """``entries``' positions, in order, grouped into PutEvents requests of at most 10 and 256 KB."""
    requests: list[list[int]] = []
    current: list[int] = []
    size = 0
    for index, entry in enumerate(entries):
        size_of_entry = entry_size(entry)
        if current and (len(current) == MAX_ENTRIES_PER_CALL or size + size_of_entry > MAX_REQUEST_BYTES):
            requests.append(current)
            current, size = [], 0
        current.append(index)
        size += size_of_entry
    if current:
        requests.append(current)
    return requests


class EventBridgeBus:
    def __init__(
        self,
        bus_name: str,
        client: EventBridgeClient | Callable[[], EventBridgeClient],
        *,
        max_attempts: int = 5,
        base_delay: float = 0.05,
        max_delay: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        outbox: Outbox | None = None,
    ) -> None:
        """``client``: the events client, or a callable making it when first needed."""
        self._bus = bus_name
        self._client: EventBridgeClient | None = None
        self._make_client: Callable[[], EventBridgeClient] | None = None
        if callable(client) and not hasattr(client, "put_events"):
            self._make_client = client
        else:
            self._client = client  # type: ignore[assignment]
        self._max_attempts = max_attempts
        self._base = base_delay
        self._cap = max_delay
        self._sleep = sleep
        self.outbox = outbox

    def publish(self, envelopes: Sequence[Envelope]) -> None:
        with spans.active().publish(self._bus, envelopes) as stamp:
            entries = [to_entry(out, self._bus, header=header) for out, header in map(stamp, envelopes)]
        if self.outbox is not None and self.outbox.hold(entries):
            return
        for batch in chunks(entries):
            not_accepted, errors = self._put(batch)
            if not_accepted:
                raise PublishError(
                    f"{len(not_accepted)} entries not accepted after {self._max_attempts} attempts: "
                    f"{errors[:3]}"
                )

    def send_held(self) -> dict[Hashable, str]:
        """Sends what the outbox holds; returns each record whose entries were not all accepted, with why.

        One request failing (after botocore's own retries) fails only the records with entries in it."""
        if self.outbox is None:
            return {}
        held = self.outbox.take()
        entries = [entry for _, entry in held]
        failed: dict[Hashable, str] = {}
        for request in request_indexes(entries):
            try:
                not_accepted, errors = self._put([entries[index] for index in request])
            except Exception as error:  # the request itself failed: none of its entries is on the bus
                not_accepted, errors = list(range(len(request))), [repr(error)]
            why = f"PutEvents did not accept a fact: {errors[:3]}"
            for position in not_accepted:
                failed.setdefault(held[request[position]][0], why)
        return failed

    def _put(self, entries: list[dict[str, Any]]) -> tuple[list[int], list[str]]:
        """Puts ``entries``, retrying the ones not accepted; the positions still not accepted, and why."""
        pending = list(range(len(entries)))
        errors: list[str] = []
        for attempt in range(self._max_attempts):
            if attempt:
                self._sleep(backoff_seconds(attempt - 1, base=self._base, cap=self._cap))
            response = self._events().put_events(Entries=[entries[index] for index in pending])  # type: ignore[misc]
            if not response.get("FailedEntryCount"):
                return [], []
            results = response["Entries"]
            errors = [
                f"{result.get('ErrorCode')}: {result.get('ErrorMessage')}"
                for result in results
                if "ErrorCode" in result
            ]
            pending = [index for index, result in zip(pending, results, strict=True) if "ErrorCode" in result]
        return pending, errors

    def _events(self) -> EventBridgeClient:
        if self._client is None:
            assert self._make_client is not None
            self._client = self._make_client()
        return self._client
