"""The pipeline's calls on the in-process local cloud are answered by moto's handlers without HTTP, and
a caller sees exactly what moto answered over botocore's ordinary path: responses, error classes,
codes, messages and the modeled error fields."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, cast

import boto3
import pytest
from botocore.exceptions import ClientError

from intentbus_local import direct_calls
from intentbus_local.backend import InProcessMoto
from intentbus_local.pinning import Pins

REGION = "us-east-1"
_VARYING = {
    "RequestId",
    "HTTPHeaders",
    "MessageId",
    "EventId",
    "TableId",
    "CreationDateTime",
    "SentTimestamp",
}
"""Drawn afresh or read from the clock on each call."""


@pytest.mark.parametrize("pins", [direct_calls.PINS, direct_calls.BOTOCORE_PINS], ids=["moto", "botocore"])
def test_the_code_the_direct_path_stands_in_for_is_the_code_it_was_written_against(pins: Pins) -> None:
    assert pins.changed() == [], (
        f"code the direct path copies changed (found on {pins.found_on}): compare intentbus_local."
        "direct_calls with it, then update its digest"
    )


@pytest.fixture
def clients() -> Iterator[Callable[[str], Any]]:  # a session's ``client``
    backend = InProcessMoto()
    backend.start()
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    try:
        yield cast(Callable[[str], Any], session.client)
    finally:
        backend.stop()


def _calls(client: Callable[[str], Any], tag: str) -> list[Any]:
    """Each call's parsed response, or its error's class and response."""
    dynamodb, sqs, events = client("dynamodb"), client("sqs"), client("events")
    table, answers = f"t{tag}", []

    def call(method: Callable[..., Any], **params: Any) -> None:
        try:
            answers.append(method(**params))
        except ClientError as error:
            answers.append({"error": type(error).__name__, "response": error.response})

    call(
        dynamodb.create_table,
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    item = {"pk": {"S": "a"}, "b": {"B": b"\x00\x01"}, "n": {"N": "1.50"}, "l": {"L": [{"BOOL": True}]}}
    call(dynamodb.put_item, TableName=table, Item=item)
    call(
        dynamodb.put_item,
        TableName=table,
        Item={"pk": {"S": "a"}},
        ConditionExpression="attribute_not_exists(pk)",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    call(dynamodb.batch_get_item, RequestItems={table: {"Keys": [{"pk": {"S": "a"}}, {"pk": {"S": "z"}}]}})
    call(
        dynamodb.update_item,
        TableName=table,
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET n = n + :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )
    call(
        dynamodb.transact_write_items,
        TransactItems=[
            {
                "Put": {
                    "TableName": table,
                    "Item": {"pk": {"S": "a"}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {"Put": {"TableName": table, "Item": {"pk": {"S": "c"}}}},
        ],
    )
    call(dynamodb.get_item, TableName="missing", Key={"pk": {"S": "a"}})
    call(dynamodb.put_item, TableName=table, Item={"pk": {"S": ""}})
    call(dynamodb.scan, TableName=table)
    queue = sqs.create_queue(QueueName=f"q{tag}")["QueueUrl"]
    call(
        sqs.send_message,
        QueueUrl=queue,
        MessageBody="hi",
        MessageAttributes={"a": {"DataType": "String", "StringValue": "v"}},
    )
    call(sqs.send_message, QueueUrl=f"{queue}-missing", MessageBody="hi")
    call(sqs.receive_message, QueueUrl=queue, MessageAttributeNames=["All"])
    call(sqs.delete_message, QueueUrl=queue, ReceiptHandle="forged")
    call(
        events.put_events,
        Entries=[
            {"Source": "a", "DetailType": "b", "Detail": "{}"},
            {"Source": "a", "DetailType": "b", "Detail": "x"},
        ],
    )
    call(events.describe_event_bus, Name="missing")
    return answers


def _comparable(answers: list[Any], tag: str) -> Any:
    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items() if k not in _VARYING and k != "ReceiptHandle"}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    return json.loads(
        json.dumps(scrub(answers), default=repr).replace(f"t{tag}", "t").replace(f"q{tag}", "q")
    )


def test_a_call_answered_directly_sees_what_moto_answers_over_http(
    clients: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[str] = []
    dispatch = direct_calls._dispatch

    def counted(*args: Any) -> Any:
        answered.append(args[1])
        return dispatch(*args)

    monkeypatch.setattr(direct_calls, "_dispatch", counted)

    with direct_calls.over_http():
        expected = _comparable(_calls(clients, "A"), "A")
    assert answered == []
    got = _comparable(_calls(clients, "B"), "B")

    assert got == expected
    assert len(answered) == len(got) + 1  # and CreateQueue
    failed = got[5]
    assert failed["error"] == "TransactionCanceledException"
    assert [r["Code"] for r in failed["response"]["CancellationReasons"]] == [
        "ConditionalCheckFailed",
        "None",
    ]
    assert got[2]["error"] == "ConditionalCheckFailedException"
    assert got[2]["response"]["Item"]["pk"] == {"S": "a"}


def test_no_http_request_is_built_while_the_cloud_runs_and_the_ordinary_path_returns_after(
    clients: Callable[[str], Any],
) -> None:
    sqs = clients("sqs")
    sent: list[str] = []
    sqs.meta.events.register_first("before-send", lambda request, **_: sent.append(request.url))

    sqs.create_queue(QueueName="direct")

    assert sent == []
    with direct_calls.over_http():
        sqs.create_queue(QueueName="over-http")
    assert len(sent) == 1
