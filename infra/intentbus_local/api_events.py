"""Lambda event shapes the local cloud sends: API Gateway REST proxy requests and scheduled events."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def rest_request(
    *,
    method: str,
    path: str,
    resource: str,
    path_parameters: Mapping[str, str],
    stage: str,
    body: str | None = None,
    query: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    claims: Mapping[str, str] | None = None,
    caller_arn: str | None = None,
    now: float,
) -> dict[str, Any]:
    """The event API Gateway (REST, Lambda proxy) sends; ``claims`` as a Cognito authorizer sets them."""
    request_headers = {"Host": "localhost", "Content-Type": "application/json", **(headers or {})}
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": request_headers,
        "multiValueHeaders": {key: [value] for key, value in request_headers.items()},
        "queryStringParameters": dict(query) if query else None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": dict(path_parameters) or None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": resource,
            "httpMethod": method,
            "path": f"/{stage}{path}",
            "stage": stage,
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(now * 1000),
            "accountId": "123456789012",
            "apiId": "local",
            "protocol": "HTTP/1.1",
            "identity": {
                "sourceIp": "127.0.0.1",
                "userAgent": request_headers.get("User-Agent", ""),
                "userArn": caller_arn,
                "caller": caller_arn,
                "accessKey": None,
                "accountId": None,
            },
            "authorizer": {"claims": dict(claims)} if claims else None,
        },
        "body": body,
        "isBase64Encoded": False,
    }


def scheduled_event(rule_arn: str, *, now: float, region: str, account_id: str) -> dict[str, Any]:
    """What an EventBridge schedule rule delivers to its Lambda target."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account_id,
        "time": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    }
