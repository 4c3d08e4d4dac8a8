"""The SQS adapter of the mover, against botocore's Stubber: the AWS answers, no network."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from intentbus_cli.queue_moves import MoveTaskUnsupported, Outgoing, run_move_task
from intentbus_cli.sqs_queues import SqsQueues

DLQ_ARN = "arn:aws:sqs:us-east-1:123456789012:dlq"
URL = "https://sqs.us-east-1.amazonaws.com/123456789012/source"


@pytest.fixture
def stubbed() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "sqs", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_the_move_task_is_started_and_followed(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_response("start_message_move_task", {"TaskHandle": "h-1"}, {"SourceArn": DLQ_ARN})
    for status, moved in (("RUNNING", 40), ("COMPLETED", 100)):
        stubber.add_response(
            "list_message_move_tasks",
            {
                "Results": [
                    {
                        "TaskHandle": "h-1",
                        "Status": status,
                        "SourceArn": DLQ_ARN,
                        "ApproximateNumberOfMessagesMoved": moved,
                        "ApproximateNumberOfMessagesToMove": 100,
                    }
                ]
            },
            {"SourceArn": DLQ_ARN, "MaxResults": 10},
        )
    final = run_move_task(SqsQueues(client), DLQ_ARN, sleep=lambda seconds: None)
    assert (final.status, final.moved, final.to_move) == ("COMPLETED", 100, 100)


def test_an_endpoint_without_the_move_task_is_told_apart_from_a_refusal(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    stubber.add_client_error("start_message_move_task", "InternalFailure", http_status_code=500)
    stubber.add_client_error("start_message_move_task", "InvalidParameterValue", http_status_code=400)
    queues = SqsQueues(client)
    with pytest.raises(MoveTaskUnsupported, match="error InternalFailure"):
        queues.start_move_task(DLQ_ARN, None)
    with pytest.raises(ClientError, match="InvalidParameterValue"):
        queues.start_move_task(DLQ_ARN, None)


def test_sent_attributes_drop_the_empty_list_fields_receive_returns(stubbed: tuple[Any, Stubber]) -> None:
    client, stubber = stubbed
    received = {
        "DataType": "String",
        "StringValue": "ValidateDLQ/m1",
        "StringListValues": [],
        "BinaryListValues": [],
    }
    stubber.add_response(
        "send_message_batch",
        {"Successful": [], "Failed": [{"Id": "1", "SenderFault": False, "Code": "InternalError"}]},
        {
            "QueueUrl": URL,
            "Entries": [
                {
                    "Id": "0",
                    "MessageBody": "a",
                    "MessageAttributes": {"origin": {"DataType": "String", "StringValue": "ValidateDLQ/m1"}},
                },
                {"Id": "1", "MessageBody": "b"},
            ],
        },
    )
    failed = SqsQueues(client).send_batch(
        URL, [("0", Outgoing(URL, "a", {"origin": received})), ("1", Outgoing(URL, "b"))]
    )
    assert failed == {"1"}
