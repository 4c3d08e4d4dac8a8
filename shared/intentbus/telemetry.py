"""Telemetry every function shares: one X-Ray trace per workflow, per-record log keys, EMF metrics.

**One trace per workflow.** A workflow's X-Ray trace id is derived from its envelope ``trace_id``
(``xray_trace_id``): every envelope a stage publishes carries ``TraceHeader: Root=<that id>`` on its
PutEvents entry, EventBridge hands it to the target queue as the message's ``AWSTraceHeader``, and
Lambda starts the next stage's invocation in that trace. The derivation is deterministic, so a stage
that publishes again after a crash, the approvals API and the expiry sweep all continue the very same
trace. Only the first hop, a producer's event, runs in whatever trace the producer sent (or a new one
Lambda starts); a producer joins the workflow's trace by sending ``TraceHeader`` =
``trace_header(trace_id)`` itself, or by using its own X-Ray trace id as the envelope's ``trace_id``.
Every per-record subsegment is annotated with the envelope's ``trace_id`` as well, so one X-Ray filter
(``annotation.trace_id = "..."``) finds every hop, that first one included.

Nothing here imports the X-Ray SDK: the current segment is consulted only when the function already
loaded it (Powertools' Tracer does) and is running in a traced invocation.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools.metrics import MetricUnit

from intentbus.frozen import Frozen, fields_repr, frozen_dataclass
from intentbus.journal import Outcome

if TYPE_CHECKING:
    import numbers

    from aws_lambda_powertools import Metrics, Tracer
    from aws_lambda_powertools.tracing.base import BaseSegment

    from intentbus.envelope import Envelope
    from intentbus.stages.common import StageResult

LAMBDA_TRACE_ENV = "_X_AMZN_TRACE_ID"
"""Where Lambda puts the invocation's trace header (``Root=...;Parent=...;Sampled=...``)."""

NAMESPACE = "intentbus"
"""X-Ray metadata namespace of the per-record subsegments."""

_XRAY_TRACE_ID = re.compile(r"^1-[0-9a-f]{8}-[0-9a-f]{24}$")
_MAX_KEY_VALUE = 128

# ---------------------------------------------------------------------------------------------- tracing


@lru_cache(maxsize=1024)  # every fact a record publishes names the same workflow
def xray_trace_id(trace_id: str) -> str:
    """The workflow's X-Ray trace id: ``trace_id`` itself when it is one, else derived from it.

    X-Ray takes the first 8 hex digits as the request's epoch time but neither requires nor checks it,
    so a hash fits there as well as a time would.
    """
    if _XRAY_TRACE_ID.match(trace_id):
        return trace_id
    digest = hashlib.sha256(trace_id.encode("utf-8")).hexdigest()
    return f"1-{digest[:8]}-{digest[8:32]}"


@frozen_dataclass(init=False, repr=False, unsafe_hash=True)  # immutable (Frozen): hashed by value
class TraceHeader(Frozen):
    """An X-Ray trace header: ``Root=1-...;Parent=<16 hex>;Sampled=1`` (Parent and Sampled optional)."""

    root: str
    parent: str | None = None
    sampled: bool | None = None

    def __init__(self, root: str, parent: str | None = None, sampled: bool | None = None) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["root"] = root
        fields["parent"] = parent
        fields["sampled"] = sampled

    __repr__ = fields_repr

    @classmethod
    def parse(cls, value: str | None) -> TraceHeader | None:
        if not value:
            return None
        fields: dict[str, str] = {}
        for part in value.split(";"):
            key, _, item = part.strip().partition("=")
            fields[key] = item
        root = fields.get("Root")
        if not root:
            return None
        sampled = {"1": True, "0": False}.get(fields.get("Sampled", ""))
        return cls(root=root, parent=fields.get("Parent") or None, sampled=sampled)

    def __str__(self) -> str:
        parts = [f"Root={self.root}"]
        if self.parent:
            parts.append(f"Parent={self.parent}")
        if self.sampled is not None:
            parts.append(f"Sampled={int(self.sampled)}")
        return ";".join(parts)


def trace_header(trace_id: str) -> str:
    """The ``TraceHeader`` for publishing an envelope of the workflow ``trace_id``.

    Inside a traced invocation that is already in the workflow's trace, the current (sub)segment is the
    parent and its sampling decision travels on; otherwise the header names only the root and the next
    hop makes its own sampling decision.
    """
    root = xray_trace_id(trace_id)
    entity = _current_entity()
    if entity is None or getattr(entity, "trace_id", None) != root:
        return _root_header(root)
    sampled = getattr(entity, "sampled", None)
    return str(TraceHeader(root=root, parent=getattr(entity, "id", None), sampled=bool(sampled)))


@lru_cache(maxsize=1024)  # every fact a record publishes names the same workflow
def _root_header(root: str) -> str:
    return str(TraceHeader(root=root))


def _current_entity() -> Any | None:
    """The X-Ray segment or subsegment open now, if this is a traced invocation with the SDK loaded."""
    # The SDK first: untraced, it is never loaded, and an absent variable costs its KeyError each time.
    sdk = sys.modules.get("aws_xray_sdk")
    core = sys.modules.get("aws_xray_sdk.core")
    if sdk is None or core is None or not os.environ.get(LAMBDA_TRACE_ENV):
        return None
    if not sdk.global_sdk_config.sdk_enabled():
        return None
    try:
        return core.xray_recorder.get_trace_entity()
    except Exception:  # a context that cannot say: no parent, the header still names the root
        return None


class RecordSpan:
    """The per-record subsegment; a no-op where the recorder made none (no segment open)."""

    def __init__(self, subsegment: BaseSegment | None) -> None:
        self._subsegment = subsegment

    def annotate(self, values: Mapping[str, Any]) -> None:
        """Indexed, searchable: the ``ANNOTATIONS`` keys and a stage's notes (``gen_ai.usage.input_tokens``
        as ``gen_ai_usage_input_tokens``: X-Ray keys are letters, digits and underscores), and only
        str / int / float / bool."""
        if self._subsegment is None:
            return
        keys = [(key, key) for key in ANNOTATIONS]
        keys += [(key, key.replace(".", "_")) for key in values if "." in key]
        for key, annotation in keys:
            value = values.get(key)
            if isinstance(value, str | bool):
                self._subsegment.put_annotation(key=annotation, value=value)
            elif isinstance(value, int | float):
                self._subsegment.put_annotation(key=annotation, value=cast("numbers.Number", value))

    def metadata(self, key: str, value: Any) -> None:
        if self._subsegment is not None and value is not None:
            self._subsegment.put_metadata(key=key, value=value, namespace=NAMESPACE)


@contextmanager
def record_span(tracer: Tracer, name: str) -> Iterator[RecordSpan]:
    with tracer.provider.in_subsegment(name=name) as subsegment:
        yield RecordSpan(subsegment)


ANNOTATIONS = ("stage", "outcome", "tenant_id", "run_id", "event_type", "trace_id", "step_index")
"""What every per-record subsegment is annotated with (X-Ray indexes annotations for filtering)."""

# ----------------------------------------------------------------------------------------- record ids

ID_KEYS = ("trace_id", "run_id", "event_id", "event_type", "tenant_id")
"""The ids every log line of a record's processing carries (with ``stage`` and ``message_id``)."""

_CLAIMED = {
    "trace_id": ("trace_id", "traceid"),
    "run_id": ("run_id", "runid"),
    "event_id": ("id",),
    "event_type": ("type", "event_type"),
    "tenant_id": ("tenant_id", "tenantid"),
}


def claimed_ids(body: object) -> dict[str, str]:
    """The ids a record's body claims before any stage has read it (best effort, never raises).

    They key the log lines of a record that fails before its envelope is known; the envelope's own ids
    replace them once a stage has parsed it. Only short printable strings are kept.
    """
    if not isinstance(body, str):
        return {}
    from intentbus.inbound import loads_body  # the stage reads the body next: parsed once for both

    try:
        event = loads_body(body)
    except (ValueError, RecursionError):
        return {}
    detail = event.get("detail") if isinstance(event, dict) else None
    if not isinstance(detail, dict):
        return {}
    ids: dict[str, str] = {}
    for key, names in _CLAIMED.items():
        for name in names:
            value = _safe(detail.get(name))
            if value is not None:
                ids[key] = value
                break
    if "event_type" not in ids and (detail_type := _safe(event.get("detail-type"))) is not None:
        ids["event_type"] = detail_type
    return ids


def envelope_ids(envelope: Envelope) -> dict[str, str]:
    return {
        "trace_id": envelope.trace_id,
        "run_id": envelope.run_id,
        "event_id": envelope.id,
        "event_type": envelope.type,
        "tenant_id": envelope.tenant_id,
    }


def record_metadata(result: StageResult, message_id: str | None) -> dict[str, Any]:
    """The subsegment's metadata for a handled record: its ids, version and what it led to (no payload)."""
    metadata: dict[str, Any] = {"message_id": message_id, "outcome": result.outcome.value}
    if result.reason:
        metadata["reason"] = result.reason
    envelope = result.envelope
    if envelope is not None:
        metadata |= {
            **envelope_ids(envelope),
            "causation_id": envelope.causation_id,
            "correlation_id": envelope.correlation_id,
            "idempotency_key": envelope.idempotency_key,
            "kind": envelope.kind.value,
            "traceparent": envelope.traceparent,
            "step_index": envelope.step_index,
            "depth": envelope.depth,
            "version": envelope.version,
        }
    metadata["published"] = [
        {"id": out.id, "type": out.type, "version": out.version} for out in result.published
    ]
    return metadata


def _safe(value: object) -> str | None:
    if not isinstance(value, str) or not value or len(value) > _MAX_KEY_VALUE or not value.isprintable():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no log line could be written with it
        return None
    return value


# -------------------------------------------------------------------------------------------- metrics

PROCESSED = "processed"
"""Records a stage finished with (any outcome); each outcome also counts under its own name."""
FAILED = "failed"
"""Records a stage raised on: SQS redelivers them, and after ``maxReceiveCount`` moves them to the DLQ."""
LATENCY = "latency"
"""Milliseconds a stage spent on one record."""
FORGED_FACTS = "forged_facts"
"""Facts quarantined because the record does not hold them as they claim (``not recorded by the
pipeline``): a forgery, or a bug that altered a fact on the way. Alarmed on."""
BUDGET_EXHAUSTED = "budget_exhausted"
"""A run paused for review because decide found a budget (depth, steps, tokens, deadline) spent."""
APPROVALS_PENDING = "approvals_pending"
APPROVAL_OLDEST_AGE = "approval_oldest_age"
"""Seconds the oldest pending approval has waited for a person."""
APPROVALS_EXPIRED = "approvals_expired"

OUTCOME_METRICS = tuple(outcome.value for outcome in Outcome)
"""One count per outcome: applied, duplicate, stale, waiting, denied, paused, quarantined, dlq."""

BUDGET_STAGE = "decide"
"""The stage whose PAUSED outcome means a budget was crossed (record pauses for unknown outcomes)."""


def outcome_counts(stage: str, outcome: Outcome, *, forged: bool = False) -> tuple[str, ...]:
    """The count metrics (value 1) one record that ended in ``outcome`` at ``stage`` adds."""
    names: tuple[str, ...] = (PROCESSED, outcome.value)
    if stage == BUDGET_STAGE and outcome is Outcome.PAUSED:
        names += (BUDGET_EXHAUSTED,)
    if forged:
        names += (FORGED_FACTS,)
    return names


class BatchCounts:
    """The count metrics of one batch, each added once with the batch's total: per record, the EMF
    document would carry a ``1`` for every record and metric (CPU, and log bytes)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()

    def add(self, names: Iterable[str]) -> None:
        self._counts.update(names)

    def clear(self) -> None:
        self._counts.clear()

    def add_to(self, metrics: Metrics) -> None:
        for name, count in self._counts.items():
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=count)
        self._counts.clear()


def add_counts(metrics: Metrics, names: Iterable[str]) -> None:
    for name in names:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def add_latency(metrics: Metrics, milliseconds: float) -> None:
    metrics.add_metric(name=LATENCY, unit=MetricUnit.Milliseconds, value=round(milliseconds, 3))


MAX_VALUES = 100
"""What one EMF document holds of a metric at most (CloudWatch's limit, Powertools' ``MAX_METRICS``): at
that many values, Powertools writes the document out and starts another."""


class BatchLatencies:
    """The ``latency`` of each record of a batch, added together at the batch's end: still one value per
    record (EMF's values of a metric are separate samples to CloudWatch: the same statistics), without a
    Powertools ``add_metric`` per record (its unit and resolution checks, and a debug text of the metric's
    values so far, each time)."""

    def __init__(self) -> None:
        self._values: list[float] = []

    def add(self, milliseconds: float) -> None:
        self._values.append(round(milliseconds, 3))

    def clear(self) -> None:
        self._values.clear()

    def add_to(self, metrics: Metrics) -> None:
        values, self._values = self._values, []
        add_values(metrics, LATENCY, MetricUnit.Milliseconds, values)


def add_values(metrics: Metrics, name: str, unit: MetricUnit, values: list[float]) -> None:
    """``values`` as samples of one metric, as many ``add_metric`` calls would add them (the same
    document, written out at ``MAX_VALUES``), with one call per document: the rest are appended to
    the values that call holds (a provider that keeps no such list is given each value by a call)."""
    provider = getattr(metrics, "provider", metrics)
    index = 0
    while index < len(values):
        metrics.add_metric(name=name, unit=unit, value=values[index])
        index += 1
        held = getattr(provider, "metric_set", {}).get(name)
        if not isinstance(held, dict) or not isinstance(held.get("Value"), list):
            continue  # written out with that value, or a provider of another kind: the next, by a call
        room = MAX_VALUES - 1 - len(held["Value"])  # the call that makes MAX_VALUES writes the document
        if room > 0:
            held["Value"].extend(float(value) for value in values[index : index + room])
            index += room


_BACKLOG_NAMES = frozenset({"ApprovalBacklog", "approval_backlog", "report_approval_backlog"})


def __getattr__(name: str) -> Any:
    """The approval backlog's figures live in ``intentbus.approval_backlog`` (only the expiry sweep reports
    them, so no stage creates the class); imported from here, they load there."""
    if name in _BACKLOG_NAMES:
        from intentbus import approval_backlog

        return getattr(approval_backlog, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
