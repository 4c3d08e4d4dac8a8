"""Condition expressions' trees kept per text and names: pinned to moto's source, and every parse answers
what moto's own ``parse`` answers for the same text, names and values (the same conditions, the same
names and values found, or the same exception), on the first parse of a text and on every later one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus_local import condition_trees, hot_paths

_PATHS = st.sampled_from(["a", "b.c", "#n", "#m.d", "a[1]", "#n[0].e", "a", "#m", "size", "and", "#x"])
_VALUES = st.sampled_from([":v0", ":v1", ":v2", ":v1", ":nope"])
_OPERANDS = st.one_of(_PATHS, _VALUES, _PATHS.map(lambda path: f"size({path})"))
_COMPARATORS = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def _conditions() -> st.SearchStrategy[str]:
    leaves = st.one_of(
        st.tuples(_OPERANDS, _COMPARATORS, _OPERANDS).map(" ".join),
        st.tuples(st.sampled_from(["attribute_exists", "attribute_not_exists"]), _PATHS).map(
            lambda parts: f"{parts[0]}({parts[1]})"
        ),
        st.tuples(st.sampled_from(["begins_with", "contains", "attribute_type"]), _PATHS, _VALUES).map(
            lambda parts: f"{parts[0]}({parts[1]}, {parts[2]})"
        ),
        st.tuples(_OPERANDS, _VALUES, _VALUES).map(lambda p: f"{p[0]} BETWEEN {p[1]} AND {p[2]}"),
        st.tuples(_OPERANDS, st.lists(_VALUES, min_size=1, max_size=3)).map(
            lambda p: f"{p[0]} IN ({', '.join(p[1])})"
        ),
        st.sampled_from(["a =", "((a = :v0)", "= :v0", "a = :v0)", "size(:v0) > :v1", "a BETWEEN :v0", ""]),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            inner.map(lambda condition: f"NOT {condition}"),
            inner.map(lambda condition: f"({condition})"),
            st.tuples(inner, st.sampled_from(["AND", "OR", "and"]), inner).map(" ".join),
        ),
        max_leaves=4,
    )


_NAME_VALUES = st.sampled_from(["x", "y", "a"])
_NAMES = st.one_of(
    st.fixed_dictionaries({"#n": _NAME_VALUES, "#m": _NAME_VALUES, "#x": _NAME_VALUES}),
    st.fixed_dictionaries({"#n": _NAME_VALUES, "#m": _NAME_VALUES}),
    st.none(),
    st.dictionaries(st.sampled_from(["#n", "#m", "#x"]), _NAME_VALUES),
)
_VALUE = st.sampled_from([{"S": "a"}, {"N": "1.5"}, {"S": "S"}, {"BOOL": True}, {"L": [{"S": "x"}]}])
_VALUE_MAPS = st.one_of(
    st.fixed_dictionaries({":v0": _VALUE, ":v1": _VALUE, ":v2": _VALUE}),
    st.fixed_dictionaries({":v0": _VALUE, ":v1": _VALUE, ":v2": _VALUE, ":nope": _VALUE}),
    st.none(),
    st.dictionaries(st.sampled_from([":v0", ":v1", ":v2"]), _VALUE),
)


def _described(value: Any) -> Any:
    """A condition as nested (type, attributes) tuples: what it is, not where it lives."""
    if isinstance(value, list | tuple):
        return [_described(item) for item in value]
    if isinstance(value, dict):
        return {key: _described(item) for key, item in value.items()}
    if hasattr(value, "__dict__"):
        return (type(value).__name__, _described(vars(value)))
    return (type(value).__name__, value)


def _outcome(parse: Any, expression: str, names: Any, values: Any) -> tuple[Any, ...]:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    parser = ConditionExpressionParser(expression, names, values)
    try:
        op = parse(parser)
    except Exception as error:
        found: tuple[Any, ...] = ("raised", type(error), str(error))
    else:
        found = ("parsed", _described(op))
    return (*found, list(parser.expr_attr_names_found), list(parser.expr_attr_values_found))


def _moto_s(expression: str, names: Any, values: Any) -> tuple[Any, ...]:
    return _outcome(
        condition_trees.PINS.moto_original("ConditionExpressionParser.parse"), expression, names, values
    )


def _ours(expression: str, names: Any, values: Any) -> tuple[Any, ...]:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    return _outcome(ConditionExpressionParser.parse, expression, names, values)


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert condition_trees.PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {condition_trees.PINS.found_on}): compare "
        "the replacement with moto's new code, then update its digest"
    )


@given(expression=_conditions(), names=_NAMES, values=_VALUE_MAPS, others=_VALUE_MAPS)
def test_a_condition_parses_as_moto_s_own_every_time_whatever_its_values(
    expression: str, names: Any, values: Any, others: Any
) -> None:
    hot_paths.apply()

    assert _ours(expression, names, values) == _moto_s(expression, names, values)
    assert _ours(expression, names, values) == _moto_s(expression, names, values)  # the kept tree
    assert _ours(expression, names, others) == _moto_s(expression, names, others)


def test_a_kept_tree_carries_no_call_s_values_to_the_next() -> None:
    hot_paths.apply()
    first = {":v0": {"S": "first"}}
    second = {":v0": {"S": "second"}}
    _ours("#n = :v0 AND attribute_exists(b)", {"#n": "a"}, first)

    assert "first" not in repr(condition_trees._kept)
    assert _ours("#n = :v0 AND attribute_exists(b)", {"#n": "a"}, second) == _moto_s(
        "#n = :v0 AND attribute_exists(b)", {"#n": "a"}, second
    )


@pytest.mark.parametrize(
    ("names", "values"),
    [([("#n", "a")], {":v0": {"S": "x"}}), ({"#n": ["a"]}, {":v0": {"S": "x"}}), ({"#n": "a"}, [":v0"])],
    ids=["names-not-a-dict", "unhashable-name", "values-not-a-dict"],
)
def test_names_or_values_that_are_not_plain_get_moto_s_own_parse(names: Any, values: Any) -> None:
    hot_paths.apply()
    for _ in range(2):
        assert _ours("#n = :v0", names, values) == _moto_s("#n = :v0", names, values)


def test_a_full_store_drops_its_oldest_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    hot_paths.apply()
    monkeypatch.setattr(condition_trees, "KEPT", 2)
    monkeypatch.setattr(condition_trees, "_kept", {})
    for text in ("a = :v0", "b = :v0", "c = :v0"):
        _ours(text, None, {":v0": {"S": "x"}})

    assert [key[1] for key in condition_trees._kept] == ["b = :v0", "c = :v0"]
