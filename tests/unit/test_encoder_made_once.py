"""``encoder_made_once`` writes what its encoder's own ``encode`` writes, for each setting the callers use:
canonical JSON, the record line, and Powertools' key and result encoders."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from aws_lambda_powertools.shared.json_encoder import Encoder
from hypothesis import given
from hypothesis import strategies as st

from intentbus.ids import encoder_made_once

ENCODERS = {
    "canonical": json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str),
    "record line": json.JSONEncoder(separators=(",", ":"), default=str),
    "powertools result": Encoder(sort_keys=True),
    "indented": json.JSONEncoder(indent=2),
}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.parametrize("name", ENCODERS)
@given(value=JSON_VALUES)
def test_the_same_text_as_the_encoder_s_own(name: str, value: Any) -> None:
    encoder = ENCODERS[name]
    assert encoder_made_once(encoder)(value) == encoder.encode(value)


def _outcome(encode: Any, value: Any) -> object:
    try:
        return encode(value)
    except TypeError as error:  # a value the encoder's default cannot write either
        return (TypeError, str(error))


@pytest.mark.parametrize("name", ["canonical", "record line", "powertools result"])
@pytest.mark.parametrize(
    "value",
    [
        {"at": datetime(2026, 12, 6, tzinfo=UTC)},
        {"amount": Decimal("1.5"), "lone": "\ud800"},
        {"set": {1}},
    ],
)
def test_values_json_cannot_hold_go_through_the_encoder_s_default(name: str, value: Any) -> None:
    encoder = ENCODERS[name]
    assert _outcome(encoder_made_once(encoder), value) == _outcome(encoder.encode, value)


def test_a_value_that_holds_itself_is_refused() -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(RecursionError):
        encoder_made_once(ENCODERS["record line"])(looped)
