"""moto's DynamoDB expressions parsed once per text: pinned to the moto source the replacements were
written against, and answering exactly what moto's own code answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from intentbus_local import dynamodb_hot_paths, hot_paths

CONDITIONS = [
    "attribute_not_exists(pk)",
    "#v = :v AND attribute_exists(#s)",
    "(a.b[1] BETWEEN :lo AND :hi) OR NOT begins_with(#n, :p)",
    "size(tags) > :n AND c IN (:x, :y, :z) AND d <> :e",
]
UPDATES = [
    "SET #v = :v, #s = :s",
    "SET a = if_not_exists(a, :zero) + :one REMOVE b ADD c :set",
    "SET #items = list_append(#items, :more) DELETE d :gone",
]


def _moto_lexer(parser: Any) -> Any:
    return dynamodb_hot_paths.PINS.moto_original("ConditionExpressionParser._lex_condition_expression")(
        parser
    )


def _tree_shape(node: Any) -> Any:
    """A node tree as nested (type, value, children) tuples, comparable between two parses."""
    children = getattr(node, "children", None)
    if isinstance(children, list):
        return (type(node).__name__, tuple(_tree_shape(child) for child in children))
    return (type(node).__name__, repr(node))


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert dynamodb_hot_paths.PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {dynamodb_hot_paths.PINS.found_on}): compare "
        "the replacement with moto's new code, then update its digest"
    )


@pytest.mark.parametrize("expression", CONDITIONS)
def test_a_condition_is_lexed_into_moto_s_own_tokens_every_time(expression: str) -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    hot_paths.apply()
    first = ConditionExpressionParser(expression, None, None)._lex_condition_expression()
    again = ConditionExpressionParser(expression, None, None)._lex_condition_expression()

    assert list(first) == list(_moto_lexer(ConditionExpressionParser(expression, None, None)))
    assert list(again) == list(first)
    assert all(a.children is not b.children for a, b in zip(first, again, strict=True))


def test_a_condition_moto_cannot_lex_fails_as_moto_s_own_does_every_time() -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    hot_paths.apply()
    with pytest.raises(ValueError, match="Cannot parse condition starting at:!") as moto_s:
        _moto_lexer(ConditionExpressionParser("a = :v AND !b", None, None))
    for _ in range(2):
        with pytest.raises(ValueError, match="Cannot parse condition") as ours:
            ConditionExpressionParser("a = :v AND !b", None, None)._lex_condition_expression()
        assert str(ours.value) == str(moto_s.value)


@pytest.mark.parametrize("expression", UPDATES)
def test_an_update_expression_parses_into_moto_s_own_tree(expression: str) -> None:
    from moto.dynamodb.parsing import expressions

    UpdateExpressionParser = vars(expressions)["UpdateExpressionParser"]
    hot_paths.apply()
    moto_make = dynamodb_hot_paths.PINS.moto_original("UpdateExpressionParser.make")

    assert _tree_shape(UpdateExpressionParser.make(expression)) == _tree_shape(
        moto_make(UpdateExpressionParser, expression)
    )
    assert UpdateExpressionParser.make(expression) is UpdateExpressionParser.make(expression)


@pytest.fixture
def table() -> Iterator[Any]:
    hot_paths.apply()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield dynamodb


def test_one_cached_tree_serves_many_updates_without_carrying_one_item_s_values_to_the_next(
    table: Any,
) -> None:
    for number in range(3):
        for _ in range(2):
            table.update_item(
                TableName="t",
                Key={"pk": {"S": f"item{number}"}},
                UpdateExpression="SET #v = if_not_exists(#v, :zero) + :one, tags = :tags",
                ExpressionAttributeNames={"#v": "version"},
                ExpressionAttributeValues={
                    ":zero": {"N": "0"},
                    ":one": {"N": str(number + 1)},
                    ":tags": {"SS": [f"t{number}"]},
                },
            )
    items = {
        item["pk"]["S"]: (item["version"]["N"], item["tags"]["SS"])
        for item in table.scan(TableName="t")["Items"]
    }

    assert items == {"item0": ("2", ["t0"]), "item1": ("4", ["t1"]), "item2": ("6", ["t2"])}


def test_a_failed_condition_and_a_bad_update_answer_as_moto_does(table: Any) -> None:
    table.put_item(TableName="t", Item={"pk": {"S": "a"}, "version": {"N": "1"}})
    for _ in range(2):
        with pytest.raises(ClientError, match="ConditionalCheckFailedException"):
            table.put_item(
                TableName="t",
                Item={"pk": {"S": "a"}},
                ConditionExpression="attribute_not_exists(pk)",
            )
        with pytest.raises(ClientError, match="ValidationException"):
            table.update_item(
                TableName="t",
                Key={"pk": {"S": "a"}},
                UpdateExpression="SET version = version + :one",
                ExpressionAttributeValues={":one": {"S": "not a number"}},
            )


@pytest.mark.parametrize("key_type", ["S", "N"])
def test_every_item_comes_in_moto_s_own_order(key_type: str) -> None:
    from moto.dynamodb.models.table import Table

    hot_paths.apply()
    with mock_aws():
        dynamodb: Any = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName="ordered",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": key_type},
                {"AttributeName": "sk", "AttributeType": key_type},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        values = ["10", "9", "1.5", "100", "2", "0.25"] if key_type == "N" else ["b", "a#2", "a#10", "B", "a"]
        for hash_value in values[:3]:
            for range_value in values:
                dynamodb.put_item(
                    TableName="ordered", Item={"pk": {key_type: hash_value}, "sk": {key_type: range_value}}
                )
        from moto.dynamodb.models import dynamodb_backends

        table = dynamodb_backends["123456789012"]["us-east-1"].get_table("ordered")
        moto_s = dynamodb_hot_paths.PINS.moto_original("Table.all_items")(table)

        assert Table.all_items(table) == moto_s
        assert [item.to_json() for item in Table.all_items(table)] == [item.to_json() for item in moto_s]
        scanned = dynamodb.scan(TableName="ordered")["Items"]
        assert [(i["pk"][key_type], i["sk"][key_type]) for i in scanned] == [
            (i.hash_key.value, i.range_key.value) for i in moto_s
        ]


def _structure(value: Any, seen: set[int] | None = None) -> Any:
    """Every attribute of every node, recursively; a node's ``parent`` as whether it is the node holding
    it. Two copies with the same structure are indistinguishable to moto's validator."""
    seen = set() if seen is None else seen
    if isinstance(value, list | tuple):
        return [_structure(item, seen) for item in value]
    if isinstance(value, dict):
        return {key: _structure(item, seen) for key, item in value.items()}
    if not hasattr(value, "__dict__"):
        return value
    assert id(value) not in seen, "a node shared within one tree"
    seen.add(id(value))
    fields = {}
    for name, item in sorted(vars(value).items()):
        if name == "parent":
            continue
        fields[name] = _structure(item, seen)
    for child in getattr(value, "children", None) or []:
        if hasattr(child, "parent"):
            assert child.parent is value
    return (type(value).__name__, fields)


def _node_ids(value: Any, found: set[int]) -> set[int]:
    if hasattr(value, "__dict__"):
        found.add(id(value))
    for child in getattr(value, "children", None) or []:
        _node_ids(child, found)
    return found


@pytest.mark.parametrize("expression", UPDATES)
def test_the_validator_s_copy_of_a_kept_tree_is_moto_s_deep_copy(expression: str) -> None:
    import copy

    from moto.dynamodb.parsing import expressions, validators

    hot_paths.apply()
    tree = vars(expressions)["UpdateExpressionParser"].make(expression)
    ours = vars(validators)["deepcopy"](tree)

    assert _structure(ours) == _structure(copy.deepcopy(tree)) == _structure(tree)
    assert not _node_ids(ours, set()) & _node_ids(tree, set())  # nothing shared with the kept tree
    assert vars(validators)["deepcopy"]([{"S": "x"}]) == [{"S": "x"}]  # any other value: deepcopy


VALIDATED = [
    "SET #v = if_not_exists(#v, :zero) + :one, tags = :tags",
    "SET #items = list_append(#items, :more), m.n = :one REMOVE gone ADD c :set DELETE tags :tags",
    "SET a = b",  # b does not exist
    "SET pk = :one",  # the key
    "SET #v = :one, #v = :zero",  # overlapping paths
    "SET m.absent.deeper = :one",  # not creatable
    "SET #v = #v - :one ADD #n :one",
]
NAMES = {"#v": "version", "#items": "items", "#n": "counter"}
VALUES = {
    ":zero": {"N": "0"},
    ":one": {"N": "1"},
    ":tags": {"SS": ["t0"]},
    ":more": {"L": [{"N": "2"}]},
    ":set": {"NS": ["5"]},
}


def _updates(dynamodb: Any) -> list[Any]:
    dynamodb.put_item(
        TableName="t",
        Item={
            "pk": {"S": "a"},
            "version": {"N": "1"},
            "items": {"L": [{"S": "x"}]},
            "m": {"M": {}},
            "gone": {"S": "soon"},
            "tags": {"SS": ["t0", "t1"]},
        },
    )
    answers: list[Any] = []
    for expression in VALIDATED:
        used = {
            "ExpressionAttributeNames": {k: v for k, v in NAMES.items() if k in expression},
            "ExpressionAttributeValues": {k: v for k, v in VALUES.items() if k in expression},
        }
        try:
            answers.append(
                dynamodb.update_item(
                    TableName="t",
                    Key={"pk": {"S": "a"}},
                    UpdateExpression=expression,
                    ReturnValues="ALL_NEW",
                    **{name: given for name, given in used.items() if given},
                )["Attributes"]
            )
        except ClientError as error:
            answers.append(error.response["Error"])
    return answers


def test_the_validator_s_traversals_update_and_refuse_as_moto_s_own(table: Any) -> None:
    from moto.dynamodb.parsing import ast_nodes

    DepthFirstTraverser = vars(ast_nodes)["DepthFirstTraverser"]
    fast = _updates(table)
    ours = vars(DepthFirstTraverser)["traverse_node_recursively"]
    moto_s = dynamodb_hot_paths.PINS.moto_original("DepthFirstTraverser.traverse_node_recursively")
    table.delete_item(TableName="t", Key={"pk": {"S": "a"}})
    DepthFirstTraverser.traverse_node_recursively = moto_s
    try:
        assert _updates(table) == fast
    finally:
        DepthFirstTraverser.traverse_node_recursively = ours
    assert [type(answer).__name__ for answer in fast] == ["dict"] * len(VALIDATED)
    assert sum("Code" in answer for answer in fast) == 4
