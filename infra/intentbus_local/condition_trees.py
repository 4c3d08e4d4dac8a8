"""moto's DynamoDB condition expressions parsed once per text and names, their values bound per call.

On moto 5.2.6 every conditional write, every filtered Query or Scan and every transaction's condition
check parses its condition expression anew, most of them twice a call (the response checks the names it
uses, the model evaluates it): ``ConditionExpressionParser.parse`` lexes the text (already kept per text:
dynamodb_hot_paths), resolves each path's ``#names`` and ``:values``, then applies functions, comparators,
IN, BETWEEN, parentheses and booleans over the tokens. The stages send the same few texts and names
with different values, so the fault harness spent about 4% of its CPU there.

Only the resolution of a ``:value`` reads the call's values, and it only looks each one up
(``_lookup_expression_attribute_value``), into the leaf that ``_make_operand`` turns into an
``AttributeValue``. So the finished tree (``node`` in moto's ``parse``) is kept per (parser class, text,
names as given), with its value leaves emptied, beside the names and values it found; a later parse of
the same text and names, whose values hold every placeholder the tree uses, looks each value up with
moto's own method into a copy of the tree, extends the parser's ``expr_attr_names_found`` and
``expr_attr_values_found`` as moto's parse does and returns moto's ``_make_op_condition`` of it. Every
other parse (a missing value, names or values that are not plain dicts, a text or names never parsed
successfully, an empty text) runs moto's own steps, so it raises what moto raises. Pinned to moto's
source of every step ``parse`` takes; on a moto whose code moved nothing is replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from intentbus_local.pinning import Pins

_PARSER = "moto.dynamodb.comparisons.ConditionExpressionParser"
PINS = Pins(
    found_on="5.2.6",
    sources={
        f"{_PARSER}.__init__": "4a3f092d6b0f1a26",
        f"{_PARSER}.parse": "5c9b63c5f49ed5d5",
        f"{_PARSER}._parse_paths": "d220e7d1e991761d",
        f"{_PARSER}._parse_path_element": "09426dc1cfbf7651",
        f"{_PARSER}._lookup_expression_attribute_value": "a7ac783bd94ea73b",
        f"{_PARSER}._lookup_expression_attribute_name": "891f122f1ef67fb3",
        f"{_PARSER}._apply_functions": "2f893d1486cfebb4",
        f"{_PARSER}._apply_comparator": "56d4e7301758a30f",
        f"{_PARSER}._apply_in": "ddfc50e8ec02b48e",
        f"{_PARSER}._apply_between": "2021e5a4b720ded7",
        f"{_PARSER}._apply_parens_and_booleans": "b454ad014a8a4376",
        f"{_PARSER}._assert_no_redundant_parentheses": "23cbb6a67bd87ef7",
        f"{_PARSER}._find_literals": "5b3c16c3b9f4aaa1",
        f"{_PARSER}._find_expr_attr_values": "613b421b92eb9d87",
        f"{_PARSER}._make_op_condition": "e9d1e9c70b61ac24",
        f"{_PARSER}._make_operand": "021131942c01900c",
    },
)

KEPT = 1024
"""Trees kept; past that, the oldest is dropped (a parse of it is moto's again, then kept anew)."""
_VALUE_KIND = "EXPRESSION_ATTRIBUTE_VALUE"
_Kept = tuple[Any, tuple[str, ...], tuple[str, ...]]
"""The tree (value leaves emptied), the names found, the values found."""
_kept: dict[tuple[Any, ...], _Kept] = {}


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.dynamodb import comparisons

    PINS.replace(vars(comparisons)["ConditionExpressionParser"], "parse", _parse)


def _key(parser: Any) -> tuple[Any, ...] | None:
    text = parser.condition_expression
    names = parser.expression_attribute_names
    values = parser.expression_attribute_values
    if not text or type(text) is not str:
        return None
    if not (names is None or type(names) is dict) or not (values is None or type(values) is dict):
        return None
    given = None if names is None else tuple(names.items())
    try:
        hash(given)
    except TypeError:
        return None
    return (type(parser), text, given)


def _parse(parser: Any) -> Any:
    key = _key(parser)
    kept = None if key is None else _kept.get(key)
    values = parser.expression_attribute_values
    if kept is not None and (not kept[2] or (values is not None and all(name in values for name in kept[2]))):
        tree, names_found, values_found = kept
        node = _bound(tree, parser._lookup_expression_attribute_value)
        parser.expr_attr_names_found.extend(names_found)
        parser.expr_attr_values_found.extend(values_found)
        return parser._make_op_condition(node)
    if key is None:
        return PINS.replaced["ConditionExpressionParser.parse"](parser)
    node = _nodes(parser)
    names_found = parser._find_literals(node)
    values_found = parser._find_expr_attr_values(node)
    if len(_kept) >= KEPT:
        del _kept[next(iter(_kept))]
    _kept[key] = (_bound(node, lambda _: None), tuple(names_found), tuple(values_found))
    parser.expr_attr_names_found.extend(names_found)
    parser.expr_attr_values_found.extend(values_found)
    return parser._make_op_condition(node)


def _nodes(parser: Any) -> Any:
    """moto's ``parse`` up to its finished tree (the same steps, in the same order)."""
    nodes = parser._lex_condition_expression()
    nodes = parser._parse_paths(nodes)
    nodes = parser._apply_functions(nodes)
    nodes = parser._apply_comparator(nodes)
    nodes = parser._apply_in(nodes)
    nodes = parser._apply_between(nodes)
    nodes = parser._apply_parens_and_booleans(nodes)
    node = nodes[0]
    parser._assert_no_redundant_parentheses(node)
    return node


def _bound(node: Any, value_of: Callable[[str], Any]) -> Any:
    """A copy of the tree whose value leaves hold ``value_of(<placeholder>)``; other leaves are shared
    (nothing after the parse changes a node)."""
    if node.kind == _VALUE_KIND:
        return node._replace(value=value_of(node.text))
    if not node.children:
        return node
    return node._replace(children=[_bound(child, value_of) for child in node.children])
