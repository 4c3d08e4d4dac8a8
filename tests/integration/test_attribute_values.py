"""DynamoDB's attribute values copied rather than walked (intentbus_local.attribute_values): pinned to the
moto code it stands for, and serializing to exactly the bytes moto's own walk gives."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from intentbus_local import attribute_values, hot_paths

REGION = "us-east-1"
ITEM: dict[str, Any] = {
    "pk": {"S": "k"},
    "empty": {"S": ""},
    "n": {"N": "-3.5e2"},
    "flag": {"BOOL": False},
    "nothing": {"NULL": True},
    "strings": {"SS": ["x", "y"]},
    "numbers": {"NS": ["1", "2.5"]},
    "m": {"M": {"l": {"L": [{"S": "a"}, {"BOOL": True}, {"NULL": True}, {"M": {}}, {"L": []}]}}},
    "blob": {"B": b"\x00\x01"},
    "blobs": {"BS": [b"\x02", b"\x03"]},
    "deep": {"M": {"b": {"B": b"\x04"}, "s": {"S": "\u00e9\u2603"}}},
}


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert attribute_values.PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {attribute_values.PINS.found_on}): compare "
        "the replacement with moto's new code, then update its digest"
    )


@pytest.fixture
def moto_s_own() -> Iterator[Callable[[], None]]:
    """Calling it puts moto's own structure serializer back until the test ends."""
    from moto.core.serialize import BaseJSONSerializer

    hot_paths.apply()
    fast = vars(BaseJSONSerializer)["_serialize_type_structure"]

    def restore() -> None:
        BaseJSONSerializer._serialize_type_structure = attribute_values.PINS.moto_original(  # type: ignore[method-assign]
            "BaseJSONSerializer._serialize_type_structure"
        )

    yield restore
    BaseJSONSerializer._serialize_type_structure = fast  # type: ignore[method-assign]


def _responses() -> list[str]:
    """The bodies moto answers for the reads and writes that return items (as boto3 parses them)."""
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    answers: list[Any] = [client.put_item(TableName="t", Item=ITEM, ReturnValues="ALL_OLD")]
    answers.append(client.put_item(TableName="t", Item={**ITEM, "n": {"N": "4"}}, ReturnValues="ALL_OLD"))
    key = {"pk": {"S": "k"}}
    answers.append(client.get_item(TableName="t", Key=key))
    answers.append(client.batch_get_item(RequestItems={"t": {"Keys": [key]}}))
    answers.append(client.scan(TableName="t"))
    answers.append(
        client.query(
            TableName="t", KeyConditionExpression="pk = :k", ExpressionAttributeValues={":k": {"S": "k"}}
        )
    )
    answers.append(
        client.update_item(
            TableName="t",
            Key=key,
            UpdateExpression="SET m.l[0] = :v",
            ExpressionAttributeValues={":v": {"M": {"x": {"NS": ["7"]}}}},
            ReturnValues="ALL_NEW",
        )
    )
    answers.append(client.transact_get_items(TransactItems=[{"Get": {"TableName": "t", "Key": key}}]))
    for answer in answers:
        answer.pop("ResponseMetadata")
    return [json.dumps(answer, default=repr) for answer in answers]


def test_the_responses_are_moto_s_own_to_the_byte(moto_s_own: Callable[[], None]) -> None:
    with mock_aws():
        fast = _responses()
    moto_s_own()
    with mock_aws():
        assert _responses() == fast
    assert '"empty": {"S": ""}' in fast[2]
    assert '"blob": {"B": "b\'\\\\x00\\\\x01\'"}' in fast[2]


@pytest.mark.parametrize(
    "value",
    [
        {"S": "a"},
        {"N": "1"},
        {"BOOL": True},
        {"NULL": True},
        {"SS": ["a", "b"]},
        {"NS": ["1"]},
        {"M": {"a": {"S": "b"}, "c": {"L": [{"N": "1"}, {"M": {"d": {"BOOL": False}}}]}}},
        {"L": []},
        {"S": None},
        {"S": 5},
        {"SS": ["a", None]},
        {"M": {"": {"S": "root"}}},
        {"M": {"a": None}},
        {"L": [None]},
        {"B": "AAE="},
        {"S": "a", "N": "1"},
        {"s": "lowercase"},
        {},
    ],
)
def test_each_value_serializes_as_moto_serializes_it(moto_s_own: Callable[[], None], value: Any) -> None:
    """Including the values the copy leaves to moto (a None, a wrong type, an empty map key, a blob)."""
    fast = _serialized(value)
    moto_s_own()
    assert _serialized(value) == fast


def _serialized(value: Any) -> str:
    from moto.core.serialize import XFormedAttributePicker, get_serializer_class
    from moto.core.utils import get_service_model

    operation = get_service_model("dynamodb").operation_model("GetItem")
    serializer = get_serializer_class("dynamodb", "json")(
        operation_model=operation, value_picker=XFormedAttributePicker()
    )
    return str(serializer.serialize({"Item": {"a": value}})["body"])
