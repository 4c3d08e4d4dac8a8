"""The poller's in-process receive (intentbus_local.sqs_receive): pinned to moto's handler, and handing
back what botocore parses of the ReceiveMessage request's answer, message by message."""

from __future__ import annotations

import random
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from intentbus_local import sqs_receive
from intentbus_local.poller import Poller

REGION = "us-east-1"
ACCOUNT = "123456789012"
Received = list[dict[str, Any]]


def test_moto_s_handler_is_the_code_the_receive_was_written_against() -> None:
    assert sqs_receive.PINS.changed() == [], (
        f"moto changed the handler the poller's receive copies (found on {sqs_receive.PINS.found_on}): "
        "compare sqs_receive with moto's new code, then update its digest"
    )


def _bodies(rng: random.Random) -> list[str]:
    texts = ["{}", '{"id": "e-1", "detail": {"x": 1}}', "plain text", "ünïcödé ✓ \U0001f600", " " * 3, "a\nb"]
    return [rng.choice(texts) + str(rng.randint(0, 9)) for _ in range(rng.randint(1, 12))]


def _send(sqs: Any, url: str, body: str, rng: random.Random, fifo: bool) -> None:
    kwargs: dict[str, Any] = {"QueueUrl": url, "MessageBody": body}
    if rng.random() < 0.5:
        trace = f"Root=1-5759e988-bd862e3fe1be46a99427{rng.randint(1000, 9999)};Sampled=1"
        kwargs["MessageSystemAttributes"] = {"AWSTraceHeader": {"StringValue": trace, "DataType": "String"}}
    if rng.random() < 0.3:
        kwargs["MessageAttributes"] = {
            "kind": {"StringValue": "x", "DataType": "String"},
            "blob": {"BinaryValue": bytes([rng.randint(0, 255) for _ in range(5)]), "DataType": "Binary"},
            "n": {"StringValue": "12.5", "DataType": "Number"},
        }
    if fifo:
        kwargs["MessageGroupId"] = f"g{rng.randint(0, 2)}"
        kwargs["MessageDeduplicationId"] = f"d{rng.random()}"
    sqs.send_message(**kwargs)


def _by_request(sqs: Any, url: str, count: int) -> Received:
    """The poller's ReceiveMessage request, as it makes it."""
    response = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=count,
        WaitTimeSeconds=0,
        MessageSystemAttributeNames=["All"],
        MessageAttributeNames=["All"],
    )
    return list(response.get("Messages", []))


def _in_process(sqs: Any, url: str, count: int) -> Received:
    from moto.sqs.models import sqs_backends

    model = sqs.meta.service_model.operation_model("ReceiveMessage")
    received = sqs_receive.receive(sqs_backends[ACCOUNT][REGION], url.rsplit("/", 1)[-1], count, model)
    assert received is not None
    return received


def _visible_again(sqs: Any, url: str, received: Received) -> None:
    for message in received:
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )


def _as_next_receive(first: Received, second: Received) -> Received:
    """``first`` as the next receive of the same messages answers it: their new handles, one more receive."""
    handles = {m["MessageId"]: m["ReceiptHandle"] for m in second}
    expected: Received = []
    for message in first:
        again = {**message, "ReceiptHandle": handles.get(message["MessageId"], "?")}
        count = int(message["Attributes"]["ApproximateReceiveCount"])
        again["Attributes"] = {**message["Attributes"], "ApproximateReceiveCount": str(count + 1)}
        expected.append(again)
    return expected


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("request_first", [True, False], ids=["request-first", "in-process-first"])
def test_the_in_process_receive_answers_what_the_request_answers(
    fifo: bool, seed: int, request_first: bool
) -> None:
    rng = random.Random(seed)
    first: Callable[[Any, str, int], Received] = _by_request if request_first else _in_process
    second: Callable[[Any, str, int], Received] = _in_process if request_first else _by_request
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        name = f"q{seed}" + (".fifo" if fifo else "")
        attributes: dict[Any, str] = {"FifoQueue": "true"} if fifo else {}
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        for body in _bodies(rng):
            _send(sqs, url, body, rng, fifo)
        for _ in range(4):
            count = rng.randint(1, 10)
            earlier = first(sqs, url, count)
            _visible_again(sqs, url, earlier)
            later = second(sqs, url, count)
            # same messages, same dicts (keys in the same order: repr tells order apart), bar the new handle
            assert repr(later) == repr(_as_next_receive(earlier, later))
            for message in later[: rng.randint(0, len(later))]:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def test_messages_without_message_attributes_are_not_serialized_and_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(*_: Any) -> Received:
        raise AssertionError("went through moto's serializer and botocore's parser")

    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="plain")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody='{"id": "e-1"}')
        expected = _by_request(sqs, url, 10)
        _visible_again(sqs, url, expected)
        monkeypatch.setattr(sqs_receive, "_parsed_by_botocore", refused)
        received = _in_process(sqs, url, 10)
    assert repr(received) == repr(_as_next_receive(expected, received))


def test_the_visibility_timeout_asked_for_is_the_one_the_messages_get() -> None:
    with mock_aws():
        from moto.sqs.models import sqs_backends

        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="peek", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="x")
        model = sqs.meta.service_model.operation_model("ReceiveMessage")
        backend = sqs_backends[ACCOUNT][REGION]

        assert len(sqs_receive.receive(backend, "peek", 10, model) or []) == 1  # the queue's: 0 s
        assert len(sqs_receive.receive(backend, "peek", 10, model, 60) or []) == 1
        assert sqs_receive.receive(backend, "peek", 10, model) == []  # invisible for 60 s
        # what moto's handler refuses is left to the request, which says so
        assert sqs_receive.receive(backend, "peek", 10, model, 43201) is None
        assert sqs_receive.receive(backend, "peek", 11, model) is None


def test_an_unknown_queue_is_left_to_the_request() -> None:
    with mock_aws():
        from moto.sqs.models import sqs_backends

        sqs = boto3.client("sqs", region_name=REGION)
        model = sqs.meta.service_model.operation_model("ReceiveMessage")
        assert sqs_receive.receive(sqs_backends[ACCOUNT][REGION], "missing", 1, model) is None


class _Requests:
    def __init__(self) -> None:
        self.made: list[dict[str, Any]] = []

    def receive_message(self, **kwargs: Any) -> dict[str, Any]:
        self.made.append(kwargs)
        return {"Messages": [{"MessageId": "by-request"}]} if len(self.made) == 1 else {}


def _poller(receive: Callable[[str, int], Received | None]) -> tuple[Poller, _Requests]:
    requests = _Requests()
    poller = Poller.__new__(Poller)
    poller._sqs = requests  # type: ignore[assignment]
    poller._receivable = None
    poller._receive = receive
    return poller, requests


def test_the_poller_receives_in_process_when_it_can_and_by_request_when_not() -> None:
    mapping: Any = SimpleNamespace(batch_size=3, queue=SimpleNamespace(url="https://q/123/stage"))
    answers: list[Received | None] = [[{"MessageId": "a"}, {"MessageId": "b"}], []]
    asked: list[tuple[str, int]] = []

    def receive(url: str, count: int) -> Received | None:
        asked.append((url, count))
        return answers.pop(0)

    poller, requests = _poller(receive)
    assert [m["MessageId"] for m in poller.receive_batch(mapping)] == ["a", "b"]
    assert asked == [("https://q/123/stage", 3), ("https://q/123/stage", 1)]
    assert requests.made == []

    poller, requests = _poller(lambda url, count: None)
    assert [m["MessageId"] for m in poller.receive_batch(mapping)] == ["by-request"]
    assert [made["MaxNumberOfMessages"] for made in requests.made] == [3, 2]
