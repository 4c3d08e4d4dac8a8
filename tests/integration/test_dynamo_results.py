"""The local cloud's conversion of moto's DynamoDB results: pinned to moto's source, and answering what
moto's own ``dynamo_to_dict`` answers (equal values of the same types, all the way down)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus_local import dynamo_results, hot_paths


def _moto() -> tuple[Any, Any, Any]:
    from moto.dynamodb import responses
    from moto.dynamodb.models import dynamo_type, utilities

    return responses, dynamo_type, utilities


def _dynamo(wire: dict[str, Any]) -> Any:
    return _moto()[1].DynamoType(wire)


def _item(attrs: dict[str, Any]) -> Any:
    dynamo_type = _moto()[1]
    return dynamo_type.Item(dynamo_type.DynamoType({"S": "h"}), None, attrs)


_WIRE_SCALARS = st.one_of(
    st.text(max_size=5).map(lambda text: {"S": text}),
    st.sampled_from(["1", "2.50"]).map(lambda n: {"N": n}),
    st.binary(max_size=4).map(lambda data: {"B": data}),
    st.binary(max_size=4).map(lambda data: {"B": base64.b64encode(data).decode()}),
    st.lists(st.binary(max_size=3), max_size=2).map(lambda items: {"BS": items}),
    st.lists(st.text(max_size=3), min_size=1, max_size=2).map(lambda items: {"SS": items}),
    st.booleans().map(lambda flag: {"BOOL": flag}),
    st.just({"NULL": True}),
)
_WIRE_VALUES = st.recursive(
    _WIRE_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: {"L": items}),
        st.dictionaries(st.text(max_size=3), inner, max_size=3).map(lambda items: {"M": items}),
    ),
    max_leaves=6,
)
_SCALARS = st.one_of(
    st.text(max_size=6),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.binary(max_size=4),
    st.decimals(allow_nan=False, allow_infinity=False, places=2),
    st.just(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
    _WIRE_VALUES,
    _WIRE_VALUES.map(_dynamo),
    st.dictionaries(st.text(min_size=1, max_size=3), _WIRE_VALUES, max_size=3).map(_item),
)
_RESULTS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
    ),
    max_leaves=10,
)


def _typed(value: Any) -> Any:
    """The value with each part's type beside it, so ``1``, ``1.0`` and ``True`` are told apart."""
    if isinstance(value, dict):
        return ("dict", [(_typed(key), _typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(item) for item in value])
    return (type(value).__name__, repr(value))


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert dynamo_results.PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {dynamo_results.PINS.found_on}): compare the "
        "replacement with moto's new code, then update its digest"
    )


@pytest.mark.usefixtures("hot_paths_applied")
@given(result=_RESULTS)
def test_a_result_is_converted_as_moto_converts_it(result: Any) -> None:
    responses, _, utilities = _moto()

    converted = responses.DynamoResult(result).result

    assert _typed(converted) == _typed(utilities.dynamo_to_dict(result))


def test_plain_values_are_converted_without_moto_s_function() -> None:
    """Fails when the conversion hands plain values over to moto's code, or binaries not to it."""
    _, dynamo_type, utilities = _moto()
    handed: list[Any] = []

    def moto_own(value: Any) -> Any:
        handed.append(value)
        return utilities.dynamo_to_dict(value)

    plain = dynamo_results.converter(moto_own, dynamo_type.DynamoType)
    result = {"Responses": {"t": [{"pk": {"S": "a"}, "n": dynamo_type.DynamoType({"N": "1"})}]}, "Count": 1}

    assert plain(result) == {"Responses": {"t": [{"pk": {"S": "a"}, "n": {"N": "1"}}]}, "Count": 1}
    assert handed == []
    binary = dynamo_type.DynamoType({"B": b"\x00"})
    assert plain([binary, Decimal("1.5")]) == [{"B": b"\x00"}, Decimal("1.5")]
    assert handed == [binary]
