"""Requests to the in-process local cloud go unsigned, and only those."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from intentbus_local import direct_calls, unsigned
from intentbus_local.backend import InProcessMoto

REGION = "us-east-1"


def _session() -> boto3.session.Session:
    return boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )


def _authorization_headers(client: Any) -> list[bytes | str | None]:
    """The Authorization header of every request the client sends from now on."""
    seen: list[bytes | str | None] = []

    def look(request: Any, **_: Any) -> None:
        seen.append(request.headers.get("Authorization"))

    client.meta.events.register_last("before-send", look)
    return seen


@pytest.fixture
def in_process() -> Iterator[None]:
    backend = InProcessMoto()
    backend.start()
    try:
        yield
    finally:
        backend.stop()


def test_a_client_of_the_in_process_cloud_sends_no_signature_and_moto_answers_as_before(
    in_process: None,
) -> None:
    # The pipeline's calls are answered before any request is built (direct_calls); a request that
    # is still sent, as here with that path off, goes unsigned.
    sqs = _session().client("sqs")
    sent = _authorization_headers(sqs)

    with direct_calls.over_http():
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="hello")
        received = sqs.receive_message(QueueUrl=url)["Messages"]

    assert sent == [None, None, None]
    assert [m["Body"] for m in received] == ["hello"]
    assert url.startswith(f"https://sqs.{REGION}.amazonaws.com/123456789012/")  # region and account as signed


def test_s3_still_signs_as_moto_s_s3_refuses_an_anonymous_request(in_process: None) -> None:
    s3 = _session().client("s3")
    sent = _authorization_headers(s3)

    s3.create_bucket(Bucket="kept-objects")
    s3.put_object(Bucket="kept-objects", Key="k", Body=b"kept")

    assert s3.get_object(Bucket="kept-objects", Key="k")["Body"].read() == b"kept"
    assert all(header is not None for header in sent)


def test_a_presigned_url_is_still_signed(in_process: None) -> None:
    s3 = _session().client("s3")

    url = s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": "k"})

    assert "Signature=" in url


def test_once_the_cloud_stops_requests_are_signed_again() -> None:
    backend = InProcessMoto()
    backend.start()
    backend.stop()
    events = _session().client("events")
    sent: list[bytes | str | None] = []

    def stop_before_sending(request: Any, **_: Any) -> None:
        sent.append(request.headers.get("Authorization"))
        raise _Stopped  # nothing may leave this process

    events.meta.events.register_first("before-send", stop_before_sending)

    with pytest.raises(_Stopped):
        events.list_event_buses()

    assert not unsigned.active()
    assert len(sent) == 1
    assert isinstance(sent[0], bytes)
    assert sent[0].startswith(b"AWS4-HMAC-SHA256 ")


class _Stopped(Exception):
    pass
