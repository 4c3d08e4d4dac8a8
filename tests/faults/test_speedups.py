"""The harness's shortcuts change no answer: sessions share what they read, never their clients."""

from __future__ import annotations

import string
from typing import Any

import botocore.session

from intentbus_faults.speedups import moto_fast_paths
from intentbus_local.service_models import shared_service_models


def test_new_sessions_share_the_loaded_models_but_each_builds_its_own_client() -> None:
    with shared_service_models():
        first, second = botocore.session.get_session(), botocore.session.get_session()
        model = first.get_component("data_loader").load_service_model("dynamodb", "service-2")
        again = second.get_component("data_loader").load_service_model("dynamodb", "service-2")
        clients = [
            session.create_client(
                "dynamodb", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
            )
            for session in (first, second)
        ]
    assert again is model, "the second session read the same JSON again"
    assert clients[0] is not clients[1]
    assert clients[0].meta.service_model.operation_names == clients[1].meta.service_model.operation_names


def test_mocked_ids_keep_their_length_and_alphabet() -> None:
    from moto.moto_api._internal import mock_random
    from moto.sqs import models

    with moto_fast_paths():
        request_id = mock_random.get_random_string(length=52)
        lower = mock_random.get_random_string(length=12, include_digits=False, lower_case=True)
        handle = vars(models)["generate_receipt_handle"]()  # what moto.sqs.models calls
    assert len(request_id) == 52
    assert set(request_id) <= set(string.ascii_letters + string.digits)
    assert len(lower) == 12
    assert set(lower) <= set(string.ascii_lowercase)
    assert len(handle) == 185
    assert set(handle) <= set(string.ascii_lowercase)
    assert len({mock_random.get_random_string(length=52) for _ in range(50)}) == 50


def test_polling_answered_in_process_gives_moto_s_answers_and_makes_no_request_for_nothing() -> None:
    import boto3
    from moto import mock_aws

    from intentbus_faults.speedups import sqs_answered_in_process

    with mock_aws():
        sqs: Any = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="stage")["QueueUrl"]
        depths = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        requests: list[str] = []
        sqs.meta.events.register("before-send.sqs.*", lambda request, **_: requests.append(request.url))
        with sqs_answered_in_process(sqs, account_id="123456789012", region="us-east-1"):
            nothing = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)
            empty_depths = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=depths)["Attributes"]
            assert requests == [], "a receive from an empty queue, or its counts, went to moto"
            sqs.send_message(QueueUrl=url, MessageBody="one")
            sqs.send_message(QueueUrl=url, MessageBody="late", DelaySeconds=60)
            received = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0, MaxNumberOfMessages=10)
            in_flight = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[*depths, "All"])["Attributes"]
            counted = sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=[*depths, "ApproximateNumberOfMessagesDelayed"]
            )["Attributes"]
        assert "Messages" not in nothing
        assert empty_depths == dict.fromkeys(depths, "0")
        assert [m["Body"] for m in received["Messages"]] == ["one"], "a visible message was not received"
        assert {name: counted[name] for name in depths} == {name: in_flight[name] for name in depths}
        assert (
            counted["ApproximateNumberOfMessagesDelayed"] == in_flight["ApproximateNumberOfMessagesDelayed"]
        )
        assert counted == {
            "ApproximateNumberOfMessages": "0",
            "ApproximateNumberOfMessagesNotVisible": "1",
            "ApproximateNumberOfMessagesDelayed": "1",
        }
        assert "receive_message" not in vars(sqs), "the client kept the shortcut after the block"
