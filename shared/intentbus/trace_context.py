"""W3C Trace Context (``traceparent``) and its X-Ray form: the same ids, written two ways.

An X-Ray trace id ``1-5f3a1b2c-0123456789abcdef01234567`` is the W3C trace id
``5f3a1b2c0123456789abcdef01234567`` (its first 8 hex digits the epoch time, which is why the OTel
backend makes its ids with ``AwsXRayIdGenerator``); an X-Ray ``Parent`` is a W3C span id. So a context
read from either header can be written in the other, and AWS's collectors and X-Ray join a trace whose
hops carry either.
"""

from __future__ import annotations

import re

from intentbus.frozen import Frozen, fields_repr, frozen_dataclass
from intentbus.telemetry import TraceHeader

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")
_XRAY_ROOT = re.compile(r"^1-([0-9a-f]{8})-([0-9a-f]{24})$")
_INVALID_TRACE = "0" * 32
_INVALID_SPAN = "0" * 16


@frozen_dataclass(init=False, repr=False, unsafe_hash=True)  # immutable (Frozen): hashed by value
class TraceParent(Frozen):
    """A W3C ``traceparent``: the trace, the parent span and whether it is sampled."""

    trace_id: str
    """32 lower-case hex digits, not all zero."""
    span_id: str
    """16 lower-case hex digits, not all zero: the span the next one is a child of."""
    sampled: bool = True

    def __init__(self, trace_id: str, span_id: str, sampled: bool = True) -> None:
        object.__setattr__(self, "trace_id", trace_id)
        object.__setattr__(self, "span_id", span_id)
        object.__setattr__(self, "sampled", sampled)

    __repr__ = fields_repr

    @classmethod
    def parse(cls, value: object) -> TraceParent | None:
        """A valid ``traceparent`` (version 00, or a later one read as 00 says); ``None`` otherwise."""
        if not isinstance(value, str):
            return None
        match = _TRACEPARENT.match(value.strip())
        if match is None:
            return None
        version, trace_id, span_id, flags, rest = match.groups()
        if version == "ff" or (version == "00" and rest) or trace_id == _INVALID_TRACE:
            return None
        if span_id == _INVALID_SPAN:
            return None
        return cls(trace_id=trace_id, span_id=span_id, sampled=bool(int(flags, 16) & 1))

    @classmethod
    def from_xray(cls, header: TraceHeader | None) -> TraceParent | None:
        """The X-Ray header's context, when it names a parent and its root is an X-Ray trace id."""
        if header is None or header.parent is None:
            return None
        match = _XRAY_ROOT.match(header.root)
        if match is None or not re.fullmatch(r"[0-9a-f]{16}", header.parent):
            return None
        sampled = header.sampled is not False
        return cls(trace_id="".join(match.groups()), span_id=header.parent, sampled=sampled)

    @property
    def xray_root(self) -> str:
        return f"1-{self.trace_id[:8]}-{self.trace_id[8:]}"

    def xray_header(self) -> TraceHeader:
        return TraceHeader(root=self.xray_root, parent=self.span_id, sampled=self.sampled)

    def __str__(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"
