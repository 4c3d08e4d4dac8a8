"""A log entry's stored JSON is its whole dump, byte for byte, with each output serialized once: the text
kept as the output's ``json_text`` is what the bus then sends as its ``Detail``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic_core import PydanticSerializationError

from intentbus.adapters.compression import compressed
from intentbus.adapters.dynamodb_store import ENTRY_COMPRESSED, entry_from_item, entry_item
from intentbus.adapters.eventbridge_bus import to_entry
from intentbus.envelope import Envelope, Kind
from intentbus.journal import LogEntry, Outcome, log_entry_json

AT = datetime(2026, 12, 6, 0, 20, 1, 123456, tzinfo=UTC)


def _output(index: int, payload: dict[str, Any]) -> Envelope:
    return Envelope(
        id=f"out-{index}",
        source="intentbus.pipeline",
        type="EventAccepted",
        time=AT,
        kind=Kind.EVENT,
        tenant_id="acme",
        trace_id="tr_1",
        run_id="run_1",
        step_index=index,
        causation_id="in-1",
        correlation_id="run_1",
        version=index + 1,
        payload=payload,
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" if index else None,
        extensions={"comexampleorigin": "eu-1", "sampled": True, "sequence": 7},
    )


PAYLOADS: list[dict[str, Any]] = [
    {},
    {"service": "checkout-api", "p99_ms": 1240.0, "threshold_ms": 500, "ok": False, "note": None},
    {
        "text": 'é ü 中文 \u2028 "quoted" \\ back',
        "outputs": [],
        "nested": {"outputs": [], "x": [1, 2.5, -0.0]},
    },
    {"big": 10**30, "tiny": 1e-300, "list": [[{"outputs": []}]], "emoji": "\U0001f600"},
]


def _entry(outputs: tuple[Envelope, ...], summary: dict[str, Any] | None = None) -> LogEntry:
    return LogEntry(
        stage="decide",
        input_id="in-1",
        input_type="EventAccepted",
        outcome=Outcome.APPLIED,
        at=AT,
        version=3,
        summary={"reason": "ok", "outputs": []} if summary is None else summary,
        outputs=outputs,
    )


@pytest.mark.parametrize("count", [0, 1, 2, 4])
@pytest.mark.parametrize("summary", [None, {}, {"outputs": [], "z": {"outputs": []}}])
def test_the_entry_json_is_the_whole_dump(count: int, summary: dict[str, Any] | None) -> None:
    outputs = tuple(_output(index, PAYLOADS[index % len(PAYLOADS)]) for index in range(count))
    entry = _entry(outputs, summary)
    expected = _entry(
        tuple(_output(index, PAYLOADS[index % len(PAYLOADS)]) for index in range(count)), summary
    )
    assert log_entry_json(entry) == expected.model_dump_json()
    for output in outputs:
        assert output.__dict__["json_text"] == output.model_dump_json()


def test_the_stored_item_holds_the_same_bytes_and_reads_back() -> None:
    outputs = tuple(_output(index, PAYLOADS[index]) for index in range(len(PAYLOADS)))
    item = entry_item("acme", "run_1", _entry(outputs))
    twin = _entry(tuple(_output(index, PAYLOADS[index]) for index in range(len(PAYLOADS))))
    assert item[ENTRY_COMPRESSED]["B"] == compressed(twin.model_dump_json().encode())
    assert entry_from_item(item) == twin


def test_the_bus_sends_the_text_the_entry_kept() -> None:
    output = _output(1, PAYLOADS[2])
    log_entry_json(_entry((output,)))
    kept = output.__dict__["json_text"]
    assert to_entry(output, "bus")["Detail"] is kept
    assert kept == _output(1, PAYLOADS[2]).model_dump_json()


def test_an_output_that_cannot_be_dumped_raises_as_the_whole_entry_does() -> None:
    entry = _entry((_output(0, PAYLOADS[1]), _output(1, {"lone": "\ud800"})))
    with pytest.raises(PydanticSerializationError):
        entry.model_dump_json()
    with pytest.raises(PydanticSerializationError):
        log_entry_json(entry)
