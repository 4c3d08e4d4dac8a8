"""Decide's entry summarizes a proposal's payload by the size ``_oversized`` measured, when its dump is
equal to it: the same JSON text, so the same entry as measuring the dump again would make."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from enum import IntEnum, StrEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intentbus.definition import Decision, ProposedCommand
from intentbus.ids import digest
from intentbus.limits import json_bytes
from intentbus.stages import decide


class _Level(IntEnum):
    LOW = 1
    HIGH = 20


class _Mode(StrEnum):
    FAST = "fast"


_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_plain = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text
_exotic = (
    st.datetimes(timezones=st.just(UTC))
    | st.decimals(allow_nan=False, allow_infinity=False, places=2)
    | st.sampled_from([_Level.LOW, _Level.HIGH, _Mode.FAST])
    | st.floats(allow_nan=True)
)
_values = st.recursive(
    _plain | _exotic,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_text, inner, max_size=3)
        | st.dictionaries(st.integers(0, 3), inner, max_size=2)
    ),
    max_leaves=8,
)
_payloads = st.dictionaries(_text, _values, max_size=4)


def _summarized_before(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary as decide made it before it reused the sizes: each dumped payload measured again."""
    for command in summary["commands"]:
        size = json_bytes(command["payload"])
        if size > decide.SUMMARY_PAYLOAD_BYTES:
            command["payload"] = {"bytes": size, "sha256": digest(command["payload"]), "in": "outputs"}
    return summary


@settings(max_examples=400)
@given(st.lists(_payloads, min_size=1, max_size=3), st.integers(0, 120))
def test_the_summary_is_the_one_measuring_each_dump_makes(
    payloads: list[dict[str, Any]], threshold: int
) -> None:
    decision = Decision(
        agent="a",
        commands=tuple(ProposedCommand(type="c", payload=payload) for payload in payloads),
        rationale="r",
        confidence=0.5,
    )
    sizes = tuple(json_bytes(proposed.payload) for proposed in decision.commands)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(decide, "SUMMARY_PAYLOAD_BYTES", threshold)  # both sides of the bound
        made = decide._summarized(decision.model_dump(mode="json"), decision, sizes)
        expected = _summarized_before(decision.model_dump(mode="json"))
    assert made == expected
    assert repr(made) == repr(expected)  # the same types too (1 and 1.0 and True are equal)


@settings(max_examples=400)
@given(_values)
def test_a_dump_equal_to_its_value_is_the_same_json(value: Any) -> None:
    dumped = Decision(
        agent="a", commands=(ProposedCommand(type="c", payload={"v": value}),), rationale="", confidence=0
    ).model_dump(mode="json")["commands"][0]["payload"]
    if dumped == {"v": value}:
        assert json_bytes(dumped) == json_bytes({"v": value})


def test_an_empty_dict_is_two_bytes_and_any_other_value_is_encoded() -> None:
    assert json_bytes({}) == 2
    assert json_bytes({"a": 1}) == len('{"a":1}')
    assert json_bytes({"é": datetime(2026, 1, 1, tzinfo=UTC)}) == len(
        '{"é":"2026-01-01 00:00:00+00:00"}'.encode()
    )
    assert json_bytes(Decimal("1.5")) == len('"1.5"')


def test_decisions_share_one_zero_usage_and_dump_it_as_before() -> None:
    from intentbus.definition import TokenUsage

    made = [
        Decision(agent="a", commands=(ProposedCommand(type="c", payload={}),), rationale="r", confidence=0.5)
        for _ in range(2)
    ]
    assert made[0].tokens is made[1].tokens == TokenUsage()
    assert "tokens" not in made[0].model_fields_set
    assert made[0].model_dump(mode="json")["tokens"] == {"input_tokens": 0, "output_tokens": 0}
    assert (made[0].tokens + TokenUsage(input_tokens=3)).total == 3
    assert made[0].tokens == TokenUsage()  # unchanged by the sum: the shared usage is immutable
