"""X-Ray on the local cloud: the trace header EventBridge hands to SQS, and Lambda's part of a trace.

What AWS does, and how it is played here:

- EventBridge passes a PutEvents entry's ``TraceHeader`` to an SQS target as the message's
  ``AWSTraceHeader`` system attribute. moto's EventBridge drops it; ``carry_trace_headers`` makes moto
  deliver it (moto's backends run in this process in both modes, so this is one patch, idempotent).
  ReceiveMessage then returns it as AWS does, and the SQS event's records carry it (sqs_event.py).
- Lambda starts an invocation's trace from the first record's ``AWSTraceHeader`` (or a new root),
  records its own function segment, and hands the function ``_X_AMZN_TRACE_ID`` = ``Root=<root>;
  Parent=<function segment id>;Sampled=<decision>``. The X-Ray SDK then builds a facade segment from it
  and streams every subsegment to the daemon. While a ``capture()`` is open, the local runtime plays
  this for every invocation (``traced_invocation``): tracing on for the function (the SDK enabled, a
  fresh Lambda context, Powertools' ``POWERTOOLS_TRACE_DISABLED=false``), the X-Ray daemon replaced by
  the capture, and the function segment emitted into it too. Outside a capture tracing is off, as the
  local runtime always had it. Start the capture before a function's first invocation: Powertools'
  Tracer patches botocore when it is created, at import (a cold start).

Fidelity limits: every invocation is sampled unless its header says ``Sampled=0``; the function
segment is the only segment the Lambda service part contributes (no ``AWS::Lambda`` service segment);
the sampled flag and subsegments follow the X-Ray SDK's own rules.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from intentbus.telemetry import LAMBDA_TRACE_ENV, TraceHeader

_CARRIED = "_intentbus_carries_trace_headers"
_DELIVERING = threading.local()


# ---------------------------------------------------------------------- EventBridge -> SQS trace header


def carry_trace_headers() -> None:
    """Makes moto's EventBridge pass each entry's ``TraceHeader`` on to SQS targets as AWS does."""
    from moto.events.models import EventsBackend
    from moto.sqs.models import SQSBackend

    if getattr(EventsBackend.put_events, _CARRIED, False):
        return
    put_events: Callable[..., list[dict[str, Any]]] = EventsBackend.put_events
    send_message: Callable[..., Any] = SQSBackend.send_message

    def put_events_carrying(self: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(events) > 10 or not any(event.get("TraceHeader") for event in events):
            return put_events(self, events)
        entries: list[dict[str, Any]] = []
        for event in events:  # one at a time, so each delivery knows its own entry's header
            _DELIVERING.header = event.get("TraceHeader") or None
            try:
                entries.extend(put_events(self, [event]))
            finally:
                _DELIVERING.header = None
        return entries

    def send_message_carrying(self: Any, *args: Any, **kwargs: Any) -> Any:
        header = getattr(_DELIVERING, "header", None)
        if header and kwargs.get("system_attributes") is None:
            kwargs["system_attributes"] = {"AWSTraceHeader": {"StringValue": header, "DataType": "String"}}
        return send_message(self, *args, **kwargs)

    setattr(put_events_carrying, _CARRIED, True)
    EventsBackend.put_events = put_events_carrying  # type: ignore[method-assign]
    SQSBackend.send_message = send_message_carrying  # type: ignore[method-assign]


# ------------------------------------------------------------------------------------------ capturing


@dataclass
class Capture:
    """Every segment document the X-Ray SDK sent during the capture, and the function segments.

    The SDK's recorder calls ``send_entity`` (the UDP emitter's interface; no socket here). Documents
    are kept as the daemon would get them: dicts, one per streamed (sub)segment, linked by
    ``parent_id``; subsegments that closed together may arrive nested under ``subsegments``.
    """

    documents: list[dict[str, Any]] = field(default_factory=list)

    def send_entity(self, entity: Any) -> None:
        self.documents.append(json.loads(entity.serialize()))

    def set_daemon_address(self, address: str | None) -> None:
        return None

    def entities(self) -> list[dict[str, Any]]:
        """Every segment and subsegment, nested ones flattened (each keeps its ``parent_id``)."""
        found: list[dict[str, Any]] = []

        def walk(document: Mapping[str, Any], parent_id: str | None) -> None:
            entity = {key: value for key, value in document.items() if key != "subsegments"}
            if parent_id is not None:
                entity.setdefault("parent_id", parent_id)
            entity.setdefault("trace_id", document.get("trace_id"))
            found.append(entity)
            for child in document.get("subsegments", ()):
                walk({"trace_id": entity.get("trace_id"), **child}, str(entity["id"]))

        for document in self.documents:
            walk(document, None)
        return found

    def function_segments(self) -> list[dict[str, Any]]:
        return [entity for entity in self.entities() if entity.get("origin") == FUNCTION_ORIGIN]

    def named(self, name: str) -> list[dict[str, Any]]:
        return [entity for entity in self.entities() if entity.get("name") == name]


FUNCTION_ORIGIN = "AWS::Lambda::Function"

_ACTIVE: list[Capture] = []


@contextlib.contextmanager
def capture() -> Iterator[Capture]:
    """Traces every local invocation while open (see the module docstring); yields what was sent.

    The X-Ray SDK's switch is process-wide: it is put back as it was when the capture ends, except that
    it stays off if botocore was patched meanwhile (patches cannot be undone, and with the SDK on every
    later AWS call of this process would look for a segment), as an untraced cold start leaves it."""
    import botocore.client
    from aws_xray_sdk import global_sdk_config

    was_enabled = global_sdk_config.sdk_enabled()
    was_patched = hasattr(botocore.client, "_xray_enabled")
    captured = Capture()
    _ACTIVE.append(captured)
    try:
        yield captured
    finally:
        _ACTIVE.remove(captured)
        patched = not was_patched and hasattr(botocore.client, "_xray_enabled")
        global_sdk_config.set_sdk_enabled(was_enabled and not patched)


def active() -> Capture | None:
    return _ACTIVE[-1] if _ACTIVE else None


# ------------------------------------------------------------------------------------ one invocation


@dataclass(frozen=True)
class InvocationTrace:
    """Lambda's trace context for one invocation."""

    root: str
    segment_id: str
    """The function segment's id: the parent of everything the function records."""
    upstream_parent: str | None
    sampled: bool

    @property
    def header(self) -> str:
        return str(TraceHeader(root=self.root, parent=self.segment_id, sampled=self.sampled))

    @classmethod
    def for_event(cls, event: Mapping[str, Any]) -> InvocationTrace:
        """From the first SQS record's ``AWSTraceHeader``, as Lambda does; else a new trace."""
        upstream = TraceHeader.parse(_first_record_trace_header(event))
        return cls(
            root=upstream.root if upstream else new_root(),
            segment_id=secrets.token_hex(8),
            upstream_parent=upstream.parent if upstream else None,
            sampled=True if upstream is None or upstream.sampled is None else upstream.sampled,
        )


def new_root() -> str:
    return f"1-{int(time.time()):08x}-{secrets.token_hex(12)}"


def _first_record_trace_header(event: Mapping[str, Any]) -> str | None:
    records = event.get("Records")
    if not isinstance(records, list) or not records or not isinstance(records[0], Mapping):
        return None
    attributes = records[0].get("attributes")
    header = attributes.get("AWSTraceHeader") if isinstance(attributes, Mapping) else None
    return header if isinstance(header, str) else None


def fresh_sandbox() -> None:
    """Before a function's module is imported (a cold start): Powertools' Tracer keeps its configuration
    on the class, across instances, so one function's "disabled" would otherwise stick to the next
    function's Tracer in this shared process; each Lambda sandbox starts with its own."""
    tracer_module = sys.modules.get("aws_lambda_powertools.tracing.tracer")
    if tracer_module is not None:
        tracer_module.Tracer._reset_config()


def environment(trace: InvocationTrace) -> dict[str, str]:
    """The variables Lambda sets for a traced invocation (Powertools turns tracing off without them)."""
    return {LAMBDA_TRACE_ENV: trace.header, "POWERTOOLS_TRACE_DISABLED": "false"}


@contextlib.contextmanager
def traced_invocation(
    captured: Capture, trace: InvocationTrace, *, function_name: str, function_arn: str, request_id: str
) -> Iterator[Callable[[BaseException | None], None]]:
    """The X-Ray SDK sends to ``captured`` for the invocation; yields ``finish(error)``, which records
    the function segment. Afterwards the recorder is put back and the SDK switched off again, so the
    local cloud's own AWS calls between invocations are not traced into a function's segment."""
    from aws_xray_sdk import global_sdk_config
    from aws_xray_sdk.core import xray_recorder
    from aws_xray_sdk.core.lambda_launcher import LambdaContext

    saved = (xray_recorder.context, xray_recorder.emitter, xray_recorder.streaming_threshold)
    global_sdk_config.set_sdk_enabled(True)
    xray_recorder.context = LambdaContext()  # a new invocation context, as in a new sandbox
    xray_recorder.emitter = captured
    xray_recorder.streaming_threshold = 0  # what Powertools configures: each subsegment sent as it closes
    started = time.time()

    def finish(error: BaseException | None) -> None:
        if not trace.sampled:
            return
        segment: dict[str, Any] = {
            "name": function_name,
            "id": trace.segment_id,
            "trace_id": trace.root,
            "start_time": started,
            "end_time": time.time(),
            "origin": FUNCTION_ORIGIN,
            "aws": {"function_arn": function_arn, "request_id": request_id},
        }
        if trace.upstream_parent:
            segment["parent_id"] = trace.upstream_parent
        if error is not None:
            segment["fault"] = True
        captured.documents.append(segment)

    try:
        yield finish
    finally:
        xray_recorder.context, xray_recorder.emitter, xray_recorder.streaming_threshold = saved
        global_sdk_config.set_sdk_enabled(False)
