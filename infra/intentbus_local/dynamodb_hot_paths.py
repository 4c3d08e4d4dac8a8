"""moto's DynamoDB expressions parsed once per expression text, not on every call.

On moto 5.2.5 every UpdateItem, conditional PutItem and TransactWriteItems lexes its condition
expressions again (``ConditionExpressionParser._lex_condition_expression`` compiles six regular
expressions per token, ``moto/dynamodb/comparisons.py``) and parses its update expression again, up to
three times a call (``UpdateExpressionParser.make``: in the response's validation and in the model's
``update_item``). The stages send the same few expression texts with different values every time, so a
local run lexed and parsed the same strings tens of thousands of times. And ``UpdateExpressionValidator``
runs ten depth-first passes over the update expression's tree, each asking its ``_processing_map()``
anew at every node (``DepthFirstTraverser.nodes_to_be_processed`` and ``process``).

- The lexer's tokens depend on the expression's text only: they are kept per text, and each call gets
  fresh nodes (their ``children`` lists are new) in moto's order. The later stages of the parse, which
  resolve names and values, run as before.
- An update expression's tree depends on its text only, and none of moto's callers changes it: the
  responses only look for placeholders in it (``find_clauses``), and ``Validator.__init__`` works on a
  deep copy. One tree is kept per text, with its pickle: the validator's copy of a kept tree is
  unpickled (a sixth of what ``deepcopy`` takes), any other value is deep-copied as before.
- A traverser's processing map is a constant dict of its bound methods: asked once per traverser.
- ``DepthFirstTraverser.traverse_node_recursively`` visits the same nodes in the same order, calling
  the same hooks and processors, but asks whether a value is a ``Node`` (an ABC, so each ``isinstance``
  goes through ``ABCMeta.__instancecheck__``) and whether it is of the traverser's node types once per
  class, and skips ``pre_processing_of_child`` where the traverser keeps the base class's, which does
  nothing. Ten traversals per UpdateItem made it a tenth of a local run.
- ``Table.all_items`` (every Query on an index, every Scan) sorts the whole table by its keys, each
  comparison of two ``DynamoType`` keys converting both values again (``cast_value``), so a Query cost
  O(n log n) conversions. Two keys of one type compare as their cast values do (``__eq__`` compares
  type and cast value, ``__lt__`` the cast values), so when every item's keys have one type the items
  are sorted by their keys' cast values, each converted once; otherwise moto's own sort runs.

Each replacement answers exactly what moto's own code answers, and the test that pins it
(tests/integration/test_dynamodb_hot_paths.py) fails when moto's replaced code changes.
"""

from __future__ import annotations

import copy
import functools
import pickle
from collections import deque
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.5",
    sources={
        "moto.dynamodb.comparisons.ConditionExpressionParser._lex_condition_expression": "a815288359216b2e",
        "moto.dynamodb.comparisons.ConditionExpressionParser._lex_one_node": "58485dd15b2f6df5",
        "moto.dynamodb.parsing.expressions.UpdateExpressionParser.make": "2c00ed96d6e191f2",
        # why one tree may be shared: the validator copies it (with the module's ``deepcopy``) first
        "moto.dynamodb.parsing.validators.Validator.__init__": "9489b532dd0fb359",
        "moto.dynamodb.parsing.ast_nodes.DepthFirstTraverser.nodes_to_be_processed": "1c2c84c8097e3517",
        "moto.dynamodb.parsing.ast_nodes.DepthFirstTraverser.process": "58328ec7c2f9b1f9",
        "moto.dynamodb.parsing.ast_nodes.DepthFirstTraverser.traverse_node_recursively": "d7f01d9b45cf9f64",
        "moto.dynamodb.parsing.ast_nodes.DepthFirstTraverser.pre_processing_of_child": "7081127933bb856d",
        "moto.dynamodb.models.table.Table.all_items": "c80d2ee3c896acd0",
        # why comparing cast values is comparing the keys: DynamoType's own comparisons
        "moto.dynamodb.models.dynamo_type.DynamoType.__eq__": "48f12362c49f00c1",
        "moto.dynamodb.models.dynamo_type.DynamoType.__lt__": "44033f9fbd16ab92",
    },
)

_TEXTS_KEPT = 512
_Token = tuple[Any, Any, Any, Any]
"""A lexed node's (nonterminal, kind, text, value); lexed nodes have no children."""


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.dynamodb import comparisons
    from moto.dynamodb.parsing import ast_nodes, expressions, validators

    ConditionExpressionParser = vars(comparisons)["ConditionExpressionParser"]
    UpdateExpressionParser = vars(expressions)["UpdateExpressionParser"]
    DepthFirstTraverser = vars(ast_nodes)["DepthFirstTraverser"]
    from moto.dynamodb.models.table import Table

    PINS.replace(ConditionExpressionParser, "_lex_condition_expression", _lexed_once)
    PINS.replace(UpdateExpressionParser, "make", classmethod(_parsed_once))
    if vars(validators)["deepcopy"] is not _copy:
        validators.deepcopy = _copy  # type: ignore[attr-defined,assignment]
    PINS.replace(DepthFirstTraverser, "nodes_to_be_processed", _node_types)
    PINS.replace(DepthFirstTraverser, "process", _process)
    PINS.replace(
        DepthFirstTraverser, "traverse_node_recursively", _traverser_walk(ast_nodes, DepthFirstTraverser)
    )
    PINS.replace(Table, "all_items", _all_items_sorted_once)


# ------------------------------------------------------------------------------ condition expressions


@functools.lru_cache(maxsize=_TEXTS_KEPT)
def _tokens(parser_class: Any, expression: str) -> tuple[_Token, ...]:
    lex = PINS.replaced["ConditionExpressionParser._lex_condition_expression"]
    lexed = lex(parser_class(expression, None, None))
    return tuple((node.nonterminal, node.kind, node.text, node.value) for node in lexed)


def _lexed_once(parser: Any) -> deque[Any]:
    parser_class: Any = type(parser)
    tokens = _tokens(parser_class, parser.condition_expression)
    return deque(
        parser.Node(nonterminal=nonterminal, kind=kind, text=text, value=value, children=[])
        for nonterminal, kind, text, value in tokens
    )


# ------------------------------------------------------------------------------ update expressions


_PICKLED: dict[int, tuple[Any, bytes]] = {}
"""id of a kept tree -> (the tree, its pickle)."""


@functools.lru_cache(maxsize=_TEXTS_KEPT)
def _tree(parser_class: Any, expression: str) -> Any:
    tree = PINS.replaced["UpdateExpressionParser.make"].__func__(parser_class, expression)
    try:
        pickled = pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # a tree pickle cannot take is deep-copied, as moto does
        return tree
    if len(_PICKLED) >= _TEXTS_KEPT:
        _PICKLED.clear()  # trees no longer kept are deep-copied: slower, the same copy
    _PICKLED[id(tree)] = (tree, pickled)
    return tree


def _copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """``deepcopy`` as moto's validators module sees it: a kept tree's copy comes from its pickle."""
    kept = _PICKLED.get(id(value))
    if kept is not None and kept[0] is value and memo is None:
        return pickle.loads(kept[1])  # our own pickle, of a tree parsed in this process
    return copy.deepcopy(value, memo)


def _parsed_once(parser_class: Any, expression: str) -> Any:
    return _tree(parser_class, expression)


# ------------------------------------------------------------------------------ table order


def _all_items_sorted_once(table: Any) -> list[Any]:
    items: list[Any] = []
    for hash_set in table.items.values():
        if table.range_key_attr:
            items.extend(hash_set.values())
        else:
            items.append(hash_set)
    key_types = {
        (item.hash_key.type, None if item.range_key is None else item.range_key.type) for item in items
    }
    if len(key_types) > 1:
        moto_s: list[Any] = PINS.replaced["Table.all_items"](table)
        return moto_s
    return sorted(
        items,
        key=lambda item: (
            (item.hash_key.cast_value, item.range_key.cast_value)
            if item.range_key is not None
            else item.hash_key.cast_value
        ),
    )


# ------------------------------------------------------------------------------ traversers

_MAP = "_intentbus_processing_map"
_TYPES = "_intentbus_node_types"


def _processing_map(traverser: Any) -> dict[type, Any]:
    found: dict[type, Any] | None = vars(traverser).get(_MAP)
    if found is None:
        found = vars(traverser)[_MAP] = traverser._processing_map()
    return found


def _node_types(traverser: Any) -> tuple[type, ...]:
    found: tuple[type, ...] | None = vars(traverser).get(_TYPES)
    if found is None:
        found = vars(traverser)[_TYPES] = tuple(_processing_map(traverser))
    return found


def _process(traverser: Any, node: Any) -> Any:
    for class_key, processor in _processing_map(traverser).items():
        if isinstance(node, class_key):
            return processor(node)
    return None


def _traverser_walk(ast_nodes: Any, traverser_class: Any) -> Any:
    node_class = ast_nodes.Node
    does_nothing = vars(traverser_class)["pre_processing_of_child"]
    is_node: dict[type, bool] = {}
    of_types: dict[tuple[type, tuple[type, ...]], bool] = {}

    def traverse_node_recursively(traverser: Any, node: Any, child_id: int = -1) -> Any:
        types = traverser.nodes_to_be_processed()
        pre = traverser.pre_processing_of_child
        if getattr(pre, "__func__", None) is does_nothing:
            pre = None

        def walk(node: Any, child_id: int) -> Any:
            kind = type(node)
            found = is_node.get(kind)
            if found is None:
                found = is_node[kind] = isinstance(node, node_class)
            if not found:
                return node
            parent_node = node.parent
            if node.children is not None:
                for i, child_node in enumerate(node.children):
                    if pre is not None:
                        pre(node, i)
                    walk(child_node, i)
            matches = of_types.get((kind, types))
            if matches is None:
                matches = of_types[(kind, types)] = isinstance(node, types)
            if matches:
                node = traverser.process(node)
                node.parent = parent_node
                if parent_node:
                    parent_node.children[child_id] = node
            return node

        return walk(node, child_id)

    return traverse_node_recursively
