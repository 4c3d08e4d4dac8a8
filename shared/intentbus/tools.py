"""Helpers for tools that call AWS: which failures are worth retrying is decided by error code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import ClientError

from intentbus.definition import ToolError

# Throttling and service-side failures pass; anything else (not found, invalid, denied) will not.
RETRYABLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestThrottled",
        "SlowDown",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalFailure",
        "InternalServerError",
        "InternalError",
        "ServerException",
        "TransactionInProgressException",
    }
)


def tool_error(error: ClientError, doing: str) -> ToolError:
    code = error.response.get("Error", {}).get("Code", "Unknown")
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return ToolError(f"{doing} failed: {code}: {error}", retryable=code in RETRYABLE_CODES or status >= 500)


@contextmanager
def aws_errors(doing: str) -> Iterator[None]:
    """Turns a botocore ClientError raised inside into the matching ToolError."""
    try:
        yield
    except ClientError as error:
        raise tool_error(error, doing) from error
