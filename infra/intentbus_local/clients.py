"""boto3 clients on the local cloud's endpoint, and the environment that points handlers at it."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import boto3

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


@functools.cache
def _session() -> boto3.session.Session:
    """One session for every local cloud of the process: botocore caches its service models per
    session, and loading them again costs ~0.1 s a client."""
    return boto3.session.Session()


class Clients:
    """``endpoint_url`` None means in-process moto, which intercepts boto3 wherever it is called."""

    def __init__(self, *, region: str, endpoint_url: str | None) -> None:
        self.region = region
        self.endpoint_url = endpoint_url
        self._cache: dict[str, Any] = {}

    def __call__(self, service_name: str) -> Any:
        if service_name not in self._cache:
            self._cache[service_name] = _session().client(  # type: ignore[call-overload]
                service_name,
                region_name=self.region,
                endpoint_url=self.endpoint_url,
                aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                aws_session_token=FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
            )
        return self._cache[service_name]

    def sqs(self) -> SQSClient:
        client: SQSClient = self("sqs")
        return client

    def events(self) -> EventBridgeClient:
        client: EventBridgeClient = self("events")
        return client

    def dynamodb(self) -> DynamoDBClient:
        client: DynamoDBClient = self("dynamodb")
        return client

    def cloudformation(self) -> CloudFormationClient:
        client: CloudFormationClient = self("cloudformation")
        return client

    def lambda_(self) -> LambdaClient:
        client: LambdaClient = self("lambda")
        return client

    def handler_environment(self) -> dict[str, str]:
        """What a handler's own boto3 needs to reach the same cloud (Lambda sets region and credentials)."""
        env = {"AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region, **FAKE_CREDENTIALS}
        if self.endpoint_url:
            env["AWS_ENDPOINT_URL"] = self.endpoint_url
        return env
