"""The runtime's AWS clients: botocore's client-side validation skipped only where the runtime builds the
requests itself, retries and timeouts kept everywhere."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ParamValidationError

from intentbus.adapters.clients import AwsClients


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


class _Raw:
    def stream(self, **_: Any) -> Any:
        yield b'{"Items": [], "Count": 0, "ScannedCount": 0}'


def _answered(client: Any, sent: list[str]) -> Any:
    """``client`` answered in memory: no request leaves the process."""

    def answer(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.url)
        return AWSResponse(request.url, 200, {"x-amzn-RequestId": "unit"}, _Raw())  # type: ignore[arg-type]

    client.meta.events.register("before-send", answer)
    return client


def _query(client: Any) -> Any:
    return client.query(
        TableName="workflow",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "T#acme#WF#run-1"}},
        Limit=0,  # below the model's minimum of 1: botocore's validation refuses it before sending
    )


def test_the_runtimes_own_requests_skip_botocores_validation_and_keep_its_retries() -> None:
    sent: list[str] = []
    dynamodb = _answered(AwsClients().client("dynamodb"), sent)
    assert _query(dynamodb)["Count"] == 0
    assert len(sent) == 1, "sent as built: AWS validates it"
    config = dynamodb.meta.config
    assert config.retries["mode"] == "standard"
    assert (config.connect_timeout, config.read_timeout) == (3, 10)


def test_a_tools_services_keep_botocores_validation() -> None:
    sent: list[str] = []
    ecs = _answered(AwsClients().client("ecs"), sent)
    with pytest.raises(ParamValidationError):
        ecs.describe_services(cluster="incidents", services="checkout-api")  # a string, not a list
    assert sent == [], "refused before sending"
