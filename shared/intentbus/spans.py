"""The tracing seam: one span per stage per record, and the trace context every published fact carries.

A backend is chosen by ``TRACING_BACKEND`` (intentbus.config): ``xray`` (the default: Powertools'
Tracer and the X-Ray SDK, intentbus.telemetry), ``otel`` (the OpenTelemetry SDK, intentbus.otel_spans,
imported only then) or ``off``. Whichever it is, what a stage publishes carries its trace context on:

- the envelope's ``traceparent`` (CloudEvents' Distributed Tracing extension) names the span that
  published it, so the next stage's span is its child, and a producer's own ``traceparent`` makes the
  first hop a child of the producer's span;
- the PutEvents entry's ``TraceHeader`` is the same context in X-Ray's form, which EventBridge hands to
  SQS and Lambda, so the AWS service segments join the very same trace.

Nothing here imports a tracing SDK.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Literal, Protocol

from intentbus import telemetry
from intentbus.envelope import MAX_TRACESTATE_CHARS
from intentbus.trace_context import TraceParent

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

    from intentbus.envelope import Envelope

BackendName = Literal["xray", "otel", "off"]
DEFAULT_BACKEND: BackendName = "xray"

Stamp = Callable[["Envelope"], tuple["Envelope", str]]
"""An envelope as it is published (carrying the publisher's trace context) and its ``TraceHeader``."""


class RecordSpan(Protocol):
    def annotate(self, values: Mapping[str, Any]) -> None:
        """The record's ids, stage and outcome (``telemetry.ANNOTATIONS``) and the stage's notes."""

    def metadata(self, key: str, value: Any) -> None: ...


class Backend(Protocol):
    name: BackendName

    def record(
        self, stage: str, raw: Mapping[str, Any], tracer: Tracer | None
    ) -> AbstractContextManager[RecordSpan]:
        """The span of one SQS record's processing by ``stage``; ``raw`` is the record as Lambda sent it."""

    def publish(self, bus_name: str, envelopes: Sequence[Envelope]) -> AbstractContextManager[Stamp]:
        """Around one publication of ``envelopes``: how each is stamped with the trace context."""

    def flush(self) -> None:
        """Sends what is buffered before the invocation ends (Lambda freezes the sandbox after it)."""


class _Silent:
    def annotate(self, values: Mapping[str, Any]) -> None:
        return None

    def metadata(self, key: str, value: Any) -> None:
        return None


def recording(span: RecordSpan) -> bool:
    """Whether ``span`` records anything: what it would be given need not be built otherwise."""
    return not isinstance(span, _Silent)


def _unchanged(envelope: Envelope) -> tuple[Envelope, str]:
    return envelope, telemetry.trace_header(envelope.trace_id)


# Made once, entered per record or publication: a ``@contextmanager`` costs a generator on every ``with``.
_NO_SPAN: AbstractContextManager[RecordSpan] = nullcontext(_Silent())
_UNCHANGED: AbstractContextManager[Stamp] = nullcontext(_unchanged)


class OffBackend:
    """No spans; published envelopes keep the trace context they had, their header names the root."""

    name: BackendName = "off"

    def record(
        self, stage: str, raw: Mapping[str, Any], tracer: Tracer | None
    ) -> AbstractContextManager[RecordSpan]:
        return _NO_SPAN

    def publish(self, bus_name: str, envelopes: Sequence[Envelope]) -> AbstractContextManager[Stamp]:
        return _UNCHANGED

    def flush(self) -> None:
        return None


class XRayBackend:
    """Powertools' Tracer: the per-record subsegment ``## <stage> record`` (intentbus.telemetry).

    A published envelope's ``traceparent`` is the W3C form of its ``TraceHeader`` when that names a
    parent (inside a traced invocation in the workflow's trace), so an OpenTelemetry subscriber joins
    the X-Ray trace; otherwise it keeps the one it had.
    """

    name: BackendName = "xray"

    def record(
        self, stage: str, raw: Mapping[str, Any], tracer: Tracer | None
    ) -> AbstractContextManager[RecordSpan]:
        if tracer is None:
            return _NO_SPAN
        return telemetry.record_span(tracer, f"## {stage} record")

    def publish(self, bus_name: str, envelopes: Sequence[Envelope]) -> AbstractContextManager[Stamp]:
        return _XRAY_STAMP

    def flush(self) -> None:
        return None


def _xray_stamp(envelope: Envelope) -> tuple[Envelope, str]:
    header = telemetry.trace_header(envelope.trace_id)
    context = TraceParent.from_xray(telemetry.TraceHeader.parse(header))
    if context is None:
        return envelope, header
    return with_context(envelope, context), header


_XRAY_STAMP: AbstractContextManager[Stamp] = nullcontext(_xray_stamp)


def with_context(envelope: Envelope, context: TraceParent, tracestate: str | None = None) -> Envelope:
    """``envelope`` carrying ``context`` as its ``traceparent`` (and the producer's ``tracestate``)."""
    state = envelope.tracestate if tracestate is None else tracestate
    return envelope.model_copy(update={"traceparent": str(context), "tracestate": state})


# ----------------------------------------------------------------------------------- the chosen one


class _Chosen:
    backend: Backend = XRayBackend()


def active() -> Backend:
    return _Chosen.backend


def configure(name: BackendName) -> Backend:
    """Makes ``name`` the process's backend (once per cold start: the runtime's settings choose it)."""
    if _Chosen.backend.name != name:
        _Chosen.backend = _build(name)
    return _Chosen.backend


def use(backend: Backend) -> Backend:
    """Installs ``backend`` and returns the one it replaced (tests)."""
    previous, _Chosen.backend = _Chosen.backend, backend
    return previous


def _build(name: BackendName) -> Backend:
    if name == "otel":
        from intentbus.otel_spans import OtelBackend

        return OtelBackend.from_environment()
    if name == "off":
        return OffBackend()
    return XRayBackend()


# ------------------------------------------------------------------------------ inbound trace context


def claimed_trace_context(body: object) -> dict[str, str]:
    """The ``traceparent`` / ``tracestate`` a record's envelope carries, read before any stage has
    parsed it (best effort, never raises): only a valid ``traceparent`` is kept."""
    if not isinstance(body, str):
        return {}
    try:
        event = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    detail = event.get("detail") if isinstance(event, dict) else None
    if not isinstance(detail, dict) or TraceParent.parse(detail.get("traceparent")) is None:
        return {}
    carried = {"traceparent": detail["traceparent"]}
    state = detail.get("tracestate")
    if isinstance(state, str) and state and len(state) <= MAX_TRACESTATE_CHARS:
        carried["tracestate"] = state
    return carried
