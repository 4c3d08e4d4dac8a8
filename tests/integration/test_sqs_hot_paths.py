"""The local cloud's faster copies of moto's code: pinned to the moto source they replace, and answering
exactly what moto's own code answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from intentbus_local import hot_paths, response_keys, sqs_hot_paths
from intentbus_local.pinning import Pins

REGION = "us-east-1"


@pytest.mark.parametrize("pins", [sqs_hot_paths.PINS, response_keys.PINS], ids=["sqs", "serializer"])
def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against(pins: Pins) -> None:
    hot_paths.apply()
    assert pins.changed() == [], (
        f"moto changed code the local cloud replaces (found on {pins.found_on}): compare the replacement "
        "with moto's new code, then update its digest"
    )


@pytest.fixture
def queue() -> Iterator[tuple[Any, str, Any]]:
    hot_paths.apply()
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="deep", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
        from moto.sqs.models import sqs_backends

        yield sqs, url, sqs_backends["123456789012"][REGION].get_queue("deep")


def test_message_counts_and_attributes_are_moto_s_own(queue: tuple[Any, str, Any]) -> None:
    sqs, url, moto_queue = queue
    for number in range(6):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{number}", DelaySeconds=60 if number == 5 else 0)
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2)  # two in flight, one delayed, three visible

    def moto_s(name: str) -> Any:
        return sqs_hot_paths.PINS.moto_original(name)(moto_queue)

    assert [m.id for m in moto_queue.messages] == [m.id for m in moto_s("Queue.messages")]
    assert len(moto_queue.messages) == 3
    assert moto_queue.approximate_number_of_messages_delayed == moto_s(
        "Queue.approximate_number_of_messages_delayed"
    )
    assert moto_queue.approximate_number_of_messages_not_visible == moto_s(
        "Queue.approximate_number_of_messages_not_visible"
    )
    assert moto_queue.attributes == moto_s("Queue.attributes")
    assert list(moto_queue.attributes) == list(moto_s("Queue.attributes"))
    answered = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (
        answered["ApproximateNumberOfMessages"],
        answered["ApproximateNumberOfMessagesNotVisible"],
        answered["ApproximateNumberOfMessagesDelayed"],
    ) == ("3", "2", "1")


def test_the_retention_check_is_moto_s_own(queue: tuple[Any, str, Any]) -> None:
    sqs, url, moto_queue = queue
    from moto.sqs.models import sqs_backends

    backend = sqs_backends["123456789012"][REGION]
    sqs.send_message(QueueUrl=url, MessageBody="kept")
    (message,) = moto_queue._messages
    original = sqs_hot_paths.PINS.moto_original("SQSBackend.is_message_valid_based_on_retention_period")
    assert backend.is_message_valid_based_on_retention_period("deep", message) is True
    assert original(backend, "deep", message) is True
    message.sent_timestamp -= (int(moto_queue.message_retention_period) + 1) * 1000
    assert backend.is_message_valid_based_on_retention_period("deep", message) is False
    assert original(backend, "deep", message) is False


def test_a_delete_is_moto_s_own_with_the_current_an_old_a_deleted_and_an_unknown_handle(
    queue: tuple[Any, str, Any],
) -> None:
    sqs, url, moto_queue = queue
    moto_delete = sqs_hot_paths.PINS.moto_original("Queue.delete_message")
    for number in range(4):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{number}")
    first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=4, VisibilityTimeout=0)["Messages"]
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=4)["Messages"]
    old_handle = next(
        m["ReceiptHandle"] for m in first if m["Body"] == "m1"
    )  # its message was received again
    current = next(m["ReceiptHandle"] for m in again if m["Body"] == "m2")

    def state() -> tuple[list[str], set[str], set[Any]]:
        return (
            [m.body for m in moto_queue._messages],
            set(moto_queue.deleted_messages),
            set(moto_queue.pending_messages),
        )

    outcomes: list[Any] = []
    for delete in (moto_queue.delete_message, lambda handle: moto_delete(moto_queue, handle)):
        saved = (
            list(moto_queue._messages),
            set(moto_queue.deleted_messages),
            set(moto_queue.pending_messages),
        )
        answered = []
        for handle in (old_handle, current, current, "not-a-handle"):
            try:
                delete(handle)
                answered.append(("deleted", state()))
            except Exception as error:
                answered.append((type(error).__name__, state()))
        outcomes.append(answered)
        moto_queue._messages, moto_queue.deleted_messages, moto_queue._pending_messages = saved

    assert outcomes[0] == outcomes[1]
    assert [outcome for outcome, _ in outcomes[0]] == [
        "deleted",
        "deleted",
        "deleted",
        "ReceiptHandleIsInvalid",
    ]
    assert outcomes[0][-1][1][0] == ["m0", "m3"]


def test_a_deep_queue_hands_out_its_messages_in_order_without_counting_them_per_message(
    queue: tuple[Any, str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What made a long local run slow down: each send and each received message counted the queue."""
    sqs, url, _ = queue
    for start in range(0, 300, 10):
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(n), "MessageBody": f"m{start + n}"} for n in range(10)]
        )
    from moto.sqs.models import Queue

    counted: list[str] = []
    attributes = vars(Queue)["attributes"]

    def counting(moto_queue: Any) -> Any:
        counted.append(moto_queue.name)
        return attributes.fget(moto_queue)

    monkeypatch.setattr(Queue, "attributes", property(counting))
    bodies: list[str] = []
    while received := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        bodies.extend(m["Body"] for m in received)
        handles = [{"Id": m["MessageId"], "ReceiptHandle": m["ReceiptHandle"]} for m in received]
        sqs.delete_message_batch(QueueUrl=url, Entries=handles)
    assert bodies == [f"m{n}" for n in range(300)]
    assert counted == []


def _dynamodb_response(client: Any) -> Any:
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    item = {
        "pk": {"S": "k"},
        "n": {"N": "3"},
        "m": {"M": {"l": {"L": [{"S": "a"}, {"BOOL": True}, {"NULL": True}]}}},
        "ss": {"SS": ["x", "y"]},
        "b": {"B": b"\x00\x01"},
    }
    client.put_item(TableName="t", Item=item)
    return client.batch_get_item(RequestItems={"t": {"Keys": [{"pk": {"S": "k"}}]}})


def test_serialized_responses_are_moto_s_own() -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        hot_paths.apply()
        fast = _dynamodb_response(client)
    from moto.core.serialize import ResponseSerializer

    replaced = vars(ResponseSerializer)["get_value"]
    ResponseSerializer.get_value = response_keys.PINS.moto_original("ResponseSerializer.get_value")  # type: ignore[method-assign]
    try:
        with mock_aws():
            moto_s = _dynamodb_response(boto3.client("dynamodb", region_name=REGION))
    finally:
        ResponseSerializer.get_value = replaced  # type: ignore[method-assign]
    for response in (fast, moto_s):
        response.pop("ResponseMetadata")
    assert json.dumps(fast, default=repr, sort_keys=True) == json.dumps(moto_s, default=repr, sort_keys=True)
    assert fast["Responses"]["t"][0]["m"]["M"]["l"]["L"][1] == {"BOOL": True}
