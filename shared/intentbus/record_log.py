"""The line a stage writes for every record it handled: one compact JSON object, at INFO.

Through Powertools' Logger that line cost about a third of a stage's own CPU per record (the caller's
frame looked up, every attribute of the log record scanned for extra keys) and ~750 bytes, half of them
the Lambda context's keys repeated on every line. This one is written straight to the stream the Logger
writes to (CloudWatch Logs), only when the Logger's level lets INFO through, with what an operator
follows a record by: the Logger's ``service``, ``stage``, ``outcome``, ``duration_ms``, the
ids (``message_id``, ``trace_id``, ``run_id``, ``correlation_id``, ``event_id``, ``event_type``,
``tenant_id``), the reason, the published types, the invocation's ``function_request_id`` and, in a
traced invocation, its ``xray_trace_id``. Every other line (a failure, a retry, the DEBUG payloads) is
the Logger's own.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from functools import lru_cache
from math import isfinite
from typing import IO, TYPE_CHECKING, Any

from intentbus.ids import encoder_made_once

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

PROCESSED = "record processed"
_TRACE_ENV = "_X_AMZN_TRACE_ID"


class RecordLog:
    def __init__(self, logger: Logger) -> None:
        self._logger = logger
        self._request_id: str | None = None
        self._xray_trace_id: str | None = None
        self._writes = True
        self._service: str | None = None
        self._bound_stream: IO[str] | None = None
        self._after_timestamp = ""
        self._tail = "}"

    def bind(self, request_id: str | None) -> None:
        """The invocation the next lines belong to (Lambda sets its trace header before calling it).

        The Logger's level, service and stream are read here, once per invocation rather than per line."""
        self._request_id = request_id
        trace = os.environ.get(_TRACE_ENV)
        self._xray_trace_id = trace.split(";", 1)[0].removeprefix("Root=") if trace else None
        self._writes = self._logger.log_level <= logging.INFO
        self._service = self._logger.service
        self._bound_stream = self._stream()
        # What every line of the invocation repeats, encoded once here rather than on every line.
        self._after_timestamp = ',"service":' + _encode(self._service) + ',"duration_ms":'
        invocation = {"function_request_id": self._request_id, "xray_trace_id": self._xray_trace_id}
        tail = _encode({key: value for key, value in invocation.items() if value is not None})
        self._tail = "," + tail[1:] if tail != "{}" else "}"

    def processed(self, fields: Mapping[str, Any], duration_ms: float) -> None:
        """The record's line; ``fields`` in the order written, ``None`` values left out (they name none of
        the line's own keys: level, message, timestamp, service, duration_ms)."""
        if not self._writes:
            return
        if None in fields.values():
            fields = {key: value for key, value in fields.items() if value is not None}
        stream = self._bound_stream
        if stream is not None and _OWN_KEYS.isdisjoint(fields):
            # The same text as the whole line encoded, its invocation's parts encoded once (``bind``).
            own = _encode(fields)
            stream.write(
                _HEAD
                + '"'
                + _now()
                + '"'
                + self._after_timestamp
                + _number(round(duration_ms, 3))
                + ("," + own[1:-1] if own != "{}" else "")
                + self._tail
                + "\n"
            )
            return
        line = self._line(fields, duration_ms)
        if stream is None:  # a handler without a stream: the Logger's own line, all the same
            extra = {key: value for key, value in line.items() if key not in ("level", "message")}
            self._logger.info(PROCESSED, extra=extra)
            return
        stream.write(_encode(line) + "\n")

    def _line(self, fields: Mapping[str, Any], duration_ms: float) -> dict[str, Any]:
        line: dict[str, Any] = {
            "level": "INFO",
            "message": PROCESSED,
            "timestamp": _now(),
            "service": self._service,
            "duration_ms": round(duration_ms, 3),
            **fields,
        }
        if self._request_id is not None:
            line["function_request_id"] = self._request_id
        if self._xray_trace_id is not None:
            line["xray_trace_id"] = self._xray_trace_id
        return line

    def _stream(self) -> IO[str] | None:
        stream: IO[str] | None = getattr(self._logger.registered_handler, "stream", None)
        return stream


def _line_encoder() -> Callable[[Any], str]:
    """``json.JSONEncoder(separators=(",", ":"), default=str).encode``, its C encoder made once (ASCII: a
    lone surrogate is escaped); a line of strings, numbers and a list of strings never holds itself."""
    return encoder_made_once(json.JSONEncoder(separators=(",", ":"), default=str))


_encode = _line_encoder()
_HEAD = '{"level":"INFO","message":' + _encode(PROCESSED) + ',"timestamp":'
_OWN_KEYS = frozenset(
    ("level", "message", "timestamp", "service", "duration_ms", "function_request_id", "xray_trace_id")
)
"""The line's own keys: a record's field named like one is written the way the whole line is."""


def _number(value: float) -> str:
    """``_encode(value)``: a finite float is written as its ``repr`` (as the encoder writes it) without
    the encoder's call; anything else goes through the encoder."""
    if type(value) is float and isfinite(value):
        return repr(value)
    return _encode(value)


def _now() -> str:
    """The time as ``YYYY-MM-DDTHH:MM:SS.mmmZ``: digits and ``-:.TZ`` only, which JSON writes as they are."""
    now = time.time()
    return _second_text(int(now)) + f".{int(now % 1 * 1000):03d}Z"


@lru_cache(maxsize=2)  # a batch's lines fall in the same second or two
def _second_text(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
