"""The claim-check bucket on S3 (``intentbus.claims.ClaimStore``).

The client is created on the first large fact, so a cold start that never meets one never pays for it.
A missing object is told as missing only to a role with ``s3:ListBucket`` (S3 says AccessDenied to
others): the template grants it on the bucket, so a deleted or expired object is quarantined with that
reason, and a real AccessDenied is an error SQS retries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


class S3Claims:
    def __init__(self, bucket: str, s3: Callable[[], Any]) -> None:
        """``s3`` gives the S3 client (e.g. ``lambda: clients.client("s3")``), asked on first use."""
        self.bucket = bucket
        self._s3 = s3

    def put(self, key: str, body: bytes) -> None:
        # The bucket's default encryption applies (SSE-S3 or the template's key); the policy requires TLS.
        self._s3().put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")

    def get(self, key: str) -> bytes | None:
        try:
            response = self._s3().get_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in _MISSING:
                return None
            raise
        body: bytes = response["Body"].read()
        return body
