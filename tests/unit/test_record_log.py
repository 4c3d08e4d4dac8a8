"""The per-record line's text: what ``json.JSONEncoder(separators=(",", ":"), default=str)`` writes of it,
byte for byte, with ``None`` fields left out and in the order given."""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus import record_log
from intentbus.record_log import PROCESSED, RecordLog


def _log(stream: io.StringIO) -> RecordLog:
    logger = SimpleNamespace(
        log_level=logging.INFO,
        service="intentbus-validate",
        registered_handler=SimpleNamespace(stream=stream),
    )
    return RecordLog(cast(Any, logger))


FIELDS: list[dict[str, Any]] = [
    {
        "stage": "validate",
        "message_id": "m-1",
        "outcome": "applied",
        "trace_id": "tr_1",
        "run_id": "run_1",
        "event_id": "evt-1",
        "event_type": "SignupReceived",
        "tenant_id": "acme",
        "correlation_id": "run_1",
        "reason": None,
        "published": ["EventAccepted"],
    },
    {"stage": "record", "message_id": None, "outcome": "quarantined", "reason": 'é "quoted" \ud800 \u2028'},
    {"stage": "decide", "message_id": "m-2", "at": datetime(2026, 12, 6, tzinfo=UTC), "published": []},
]


@pytest.mark.parametrize("fields", FIELDS)
@pytest.mark.parametrize("traced", [False, True])
def test_the_line_is_the_json_encoders_text(
    fields: dict[str, Any], traced: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if traced:
        monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
    else:
        monkeypatch.delenv("_X_AMZN_TRACE_ID", raising=False)
    stream = io.StringIO()
    log = _log(stream)
    log.bind("req-7")
    log.processed(fields, 1.23456)

    text = stream.getvalue()
    written = json.loads(text)
    expected: dict[str, Any] = {
        "level": "INFO",
        "message": PROCESSED,
        "timestamp": written["timestamp"],
        "service": "intentbus-validate",
        "duration_ms": 1.235,
    }
    expected.update((key, value) for key, value in fields.items() if value is not None)
    expected["function_request_id"] = "req-7"
    if traced:
        expected["xray_trace_id"] = "1-5759e988-bd862e3fe1be46a994272793"
    assert text == json.JSONEncoder(separators=(",", ":"), default=str).encode(expected) + "\n"
    assert text.isascii()


@pytest.mark.parametrize("request_id", [None, "req-8"])
@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"reason": None},
        {"stage": "execute", "duration": 2.5, "count": 3, "ok": True},
        {"service": "a field named like the line's own", "stage": "record"},
        {"function_request_id": "claimed", "published": ["X"]},
    ],
)
def test_the_line_made_from_its_invocations_parts_is_the_whole_lines_text(
    fields: dict[str, Any], request_id: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The invocation's parts (service, request id, trace id) are encoded once per batch: the line is still
    the text of the whole line's dict, as written before, even when a field is named like one of its keys."""
    monkeypatch.delenv("_X_AMZN_TRACE_ID", raising=False)
    stream = io.StringIO()
    log = _log(stream)
    log.bind(request_id)
    log.processed(fields, 0.5)

    text = stream.getvalue()
    line: dict[str, Any] = {
        "level": "INFO",
        "message": PROCESSED,
        "timestamp": json.loads(text)["timestamp"],
        "service": "intentbus-validate",
        "duration_ms": 0.5,
        **fields,
    }
    for key in [key for key, value in fields.items() if value is None]:
        del line[key]
    if request_id is not None:
        line["function_request_id"] = request_id
    assert text == json.JSONEncoder(separators=(",", ":"), default=str).encode(line) + "\n"


@given(value=st.floats() | st.integers())
def test_a_duration_is_written_as_the_encoder_writes_it(value: float) -> None:
    assert record_log._number(value) == json.JSONEncoder(separators=(",", ":"), default=str).encode(value)


@pytest.mark.parametrize("duration_ms", [0.0, 0.0004, 0.5, 1.23456, 987.6545, 1e20, 12345678.9])
def test_the_timestamp_and_duration_are_the_whole_lines_text(duration_ms: float) -> None:
    stream = io.StringIO()
    log = _log(stream)
    log.bind("req-9")
    log.processed({"stage": "record"}, duration_ms)

    text = stream.getvalue()
    timestamp = json.loads(text)["timestamp"]
    line = {
        "level": "INFO",
        "message": PROCESSED,
        "timestamp": timestamp,
        "service": "intentbus-validate",
        "duration_ms": round(duration_ms, 3),
        "stage": "record",
        "function_request_id": "req-9",
    }
    assert text == json.JSONEncoder(separators=(",", ":"), default=str).encode(line) + "\n"
    assert datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%fZ").microsecond % 1000 == 0
