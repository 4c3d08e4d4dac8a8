"""The local cloud's one-pass build of moto's DynamoDB items: pinned to moto's source, and answering what
moto's own ``Item.__init__`` answers (the same attributes in the same order, or the same exception)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus_local import hot_paths, item_sizes

_NAMES = st.text(min_size=1, max_size=6) | st.sampled_from(["pk", "sk", "é" * 3])
_SCALARS = st.one_of(
    st.text(max_size=8).map(lambda text: {"S": text}),
    st.integers(0, 210_000).map(lambda length: {"S": "x" * length}),  # toward and past the 400 KB limit
    st.sampled_from(["1", "-0.5", "1E+3", "12345678901234567890", "", "nan", "abc"]).map(lambda n: {"N": n}),
    st.binary(max_size=8).map(lambda data: {"B": data}),
    st.booleans().map(lambda flag: {"BOOL": flag}),
    st.just({"NULL": True}),
    st.lists(st.text(max_size=4), min_size=1, max_size=3).map(lambda texts: {"SS": texts}),
    st.lists(st.sampled_from(["1", "2.5", "x"]), min_size=1, max_size=3).map(lambda ns: {"NS": ns}),
    # hostile shapes: what moto makes of them, it makes of them either way
    st.sampled_from([{"S": 5}, {"N": 7}, {}, {"S": "a", "N": "1"}, {"L": "not a list"}, {"M": None}]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda values: {"L": values}),
        st.dictionaries(_NAMES, inner, max_size=3).map(lambda values: {"M": values}),
    ),
    max_leaves=6,
)
_ATTRIBUTES = st.dictionaries(_NAMES, _VALUES, max_size=8)


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert item_sizes.PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {item_sizes.PINS.found_on}): compare the "
        "replacement with moto's new code, then update its digest"
    )


def _outcome(init: Any, attrs: Any) -> tuple[Any, ...]:
    from moto.dynamodb.models.dynamo_type import DynamoType, Item

    item: Any = Item.__new__(Item)
    try:
        init(item, DynamoType({"S": "h"}), None, attrs)
    except Exception as error:
        return ("raised", type(error), str(error), type(getattr(item, "attrs", None)).__name__)
    return ("built", type(item.attrs).__name__, [(k, repr(v)) for k, v in item.attrs.items()])


@pytest.mark.usefixtures("hot_paths_applied")
@given(attrs=_ATTRIBUTES)
def test_an_item_is_built_as_moto_builds_it_or_refused_as_moto_refuses_it(attrs: dict[str, Any]) -> None:
    from moto.dynamodb.models.dynamo_type import Item

    moto_init = item_sizes.PINS.moto_original("Item.__init__")

    assert _outcome(Item.__init__, attrs) == _outcome(moto_init, attrs)


@pytest.mark.parametrize(
    "attrs", [{1: {"S": "x"}}, {"a": {"S": "x"}, ("b",): {"S": "y"}}], ids=["int", "tuple"]
)
def test_names_that_are_not_text_get_moto_s_own_answer(attrs: Any) -> None:
    from moto.dynamodb.models.dynamo_type import Item

    hot_paths.apply()
    moto_init = item_sizes.PINS.moto_original("Item.__init__")

    assert _outcome(Item.__init__, attrs) == _outcome(moto_init, attrs)


def test_the_limit_is_moto_s_to_the_byte() -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item

    hot_paths.apply()
    just_fits = {"a": {"S": "x" * 200_000}, "b": {"S": "y" * (405_000 - 200_002)}}
    Item(DynamoType({"S": "h"}), None, just_fits)
    with pytest.raises(ItemSizeTooLarge):
        Item(DynamoType({"S": "h"}), None, {**just_fits, "c": {"BOOL": True}})


def test_an_item_is_built_without_moto_s_per_attribute_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails when the replacement is not installed or hands plain attributes over to moto's code."""
    from moto.dynamodb.models import dynamo_type

    hot_paths.apply()
    summed: list[str] = []
    moto_setitem = dynamo_type.LimitedSizeDict.__setitem__

    def counted(self: Any, key: str, value: Any) -> None:
        summed.append(key)
        moto_setitem(self, key, value)

    monkeypatch.setattr(dynamo_type.LimitedSizeDict, "__setitem__", counted)
    item = dynamo_type.Item(dynamo_type.DynamoType({"S": "h"}), None, {"a": {"S": "1"}, "b": {"N": "2"}})

    assert summed == []
    assert list(item.attrs) == ["a", "b"]
