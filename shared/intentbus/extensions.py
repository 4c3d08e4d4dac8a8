"""CloudEvents extension attributes an envelope carries on: their names, their values and the bounds.

An extension the pipeline does not read itself (``comexampleorigin``, the Partitioning extension's
``partitionkey``, ...) is kept on the envelope and copied to everything that follows it, so later
stages and the published facts carry it. Bounded, so that an input's facts stay far inside the
256 KB an EventBridge entry may have.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from intentbus.errors import IntentbusError

MAX_EXTENSIONS = 32
"""At most this many extension attributes on one envelope."""
MAX_EXTENSIONS_BYTES = 8 * 1024
"""Their names and values together, as compact JSON in UTF-8, at most this many bytes."""
MAX_NAME_CHARS = 64
NAME = re.compile(rf"[a-z0-9]{{1,{MAX_NAME_CHARS}}}")
"""CloudEvents' rule for an attribute name (lower-case ASCII letters and digits), and a length bound."""
INT32 = range(-(2**31), 2**31)
"""CloudEvents' Integer."""

CONTEXT_ATTRIBUTES = frozenset(
    {"id", "source", "specversion", "type", "datacontenttype", "dataschema", "subject", "time"}
)
TRACE_CONTEXT = frozenset({"traceparent", "tracestate"})
"""The Distributed Tracing extension: kept on the envelope as fields of their own."""
WORKFLOW_ATTRIBUTES = {
    "tenantid": "tenant_id",
    "traceid": "trace_id",
    "runid": "run_id",
    "stepindex": "step_index",
    "idempotencykey": "idempotency_key",
    "causationid": "causation_id",
    "correlationid": "correlation_id",
    "depth": "depth",
    "version": "version",
}
"""The extension attributes that carry the envelope's workflow fields."""
RESERVED = (
    CONTEXT_ATTRIBUTES
    | TRACE_CONTEXT
    | set(WORKFLOW_ATTRIBUTES)
    | {
        "data",
        "kind",
        "payload",
        "extensions",
        "timestamp",
    }
)
"""Names the envelope reads itself (context attributes, its own fields and their aliases): never an
extension to carry on."""

Extensions = dict[str, str | int | bool]

RUN_ENDED = "intentbusrunended"
"""Set (``true``) by record on the outcome event that ends its run: no stage is sent that event (the
template's ``DecideOutcomeRule`` leaves it out), since no step follows it; subscribers still get it, and
may read the mark. Only the pipeline sets it: a producer's input that carries it is quarantined (carried
on to its run's outcomes, it would keep every one of them from decide)."""


class ExtensionProblem(IntentbusError, ValueError):
    """Why an envelope cannot carry these extensions, and where (never repeating the input). A
    ``ValueError`` too, so a pydantic validator that raises it reports a validation error."""

    code: ClassVar[str] = "extension_problem"

    def __init__(self, reason: str, field: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


def check_extensions(extensions: Mapping[Any, object], *, at: str = "extensions") -> None:
    """Raises ``ExtensionProblem`` for the first thing wrong with ``extensions``.

    ``at`` is where they sit in the input (``""``: top-level attributes, as CloudEvents puts them); a
    problem with one of them is located at ``<key>``, as a validation error names a key the schema
    does not (``intentbus.validation_errors``)."""
    if not extensions:  # most envelopes: nothing to check, nor to measure
        return
    one = f"{at}.<key>" if at else "<key>"
    whole = at or "<key>"
    if len(extensions) > MAX_EXTENSIONS:
        raise ExtensionProblem(
            f"{len(extensions)} extension attributes, over the {MAX_EXTENSIONS} an event may carry", whole
        )
    for name, value in extensions.items():
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ExtensionProblem(
                "an extension attribute's name is lower-case letters and digits (CloudEvents), at most "
                f"{MAX_NAME_CHARS} of them",
                one,
            )
        if name in RESERVED:
            raise ExtensionProblem(f"{name} is read by the envelope itself, not carried as an extension", one)
        if isinstance(value, bool | str):
            continue
        if isinstance(value, int):
            if value not in INT32:
                raise ExtensionProblem(
                    "an extension attribute's integer is outside CloudEvents' range (32-bit signed)", one
                )
            continue
        raise ExtensionProblem(
            "an extension attribute's value is a string, an integer or a boolean (CloudEvents), "
            f"not {_a(value)}",
            one,
        )
    size = len(json.dumps(extensions, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_EXTENSIONS_BYTES:
        raise ExtensionProblem(
            f"the extension attributes take {size} bytes as JSON, over the {MAX_EXTENSIONS_BYTES} an "
            "event may carry",
            whole,
        )


def _a(value: object) -> str:
    if value is None:
        return "null"
    kinds = {dict: "a JSON object", list: "a JSON array", float: "a fractional number"}
    return kinds.get(type(value), f"a {type(value).__name__}")
