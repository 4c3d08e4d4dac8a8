"""``intentbus local run`` sends its inputs ten to a PutEvents, never past the request's size limit."""

from __future__ import annotations

from typing import Any

from intentbus.limits import PUT_EVENTS_LIMIT_BYTES, entry_size
from intentbus_cli.local import _bus_entry, _put_events_groups


def _lines(details: list[str]) -> list[tuple[tuple[int, dict[str, Any]], dict[str, str]]]:
    envelopes = [
        (number, {"type": "t", "source": "s", "data": detail}) for number, detail in enumerate(details)
    ]
    return [(line, _bus_entry(line[1])) for line in envelopes]


def test_inputs_go_ten_to_a_request_in_their_order() -> None:
    lines = _lines([f"d{n}" for n in range(25)])
    groups = _put_events_groups(lines)

    assert [len(group) for group in groups] == [10, 10, 5]
    assert [item for group in groups for item in group] == lines


def test_a_request_stays_within_put_events_size_limit_and_an_oversized_input_goes_alone() -> None:
    third = "x" * (PUT_EVENTS_LIMIT_BYTES // 3)
    lines = _lines(["small", third, third, third, "x" * PUT_EVENTS_LIMIT_BYTES, "after"])
    groups = _put_events_groups(lines)

    assert [[number for (number, _), _ in group] for group in groups] == [[0, 1, 2], [3], [4], [5]]
    assert all(sum(entry_size(entry) for _, entry in group) <= PUT_EVENTS_LIMIT_BYTES for group in groups[:2])
