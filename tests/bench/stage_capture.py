"""What the stage benchmark replays: ten incident runs at once on the in-process local cloud, captured.

For each of the five stages: the function's environment, the SQS records Lambda handed it, and every
AWS response it got, raw (status, headers, body bytes as moto sent them), keyed by operation and by
the request's exact body. ``tests.bench.stage_probe`` replays them with botocore's HTTP send faked, so
signing, serializing and parsing still run on the real bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from botocore.endpoint import Endpoint


def request_key(body: object) -> str:
    """The replay's lookup key of a request: a digest of its exact body."""
    if isinstance(body, str):
        body = body.encode()
    if not isinstance(body, bytes):
        body = b""
    return hashlib.sha1(body, usedforsecurity=False).hexdigest()


@contextmanager
def _responses_recorded(into: dict[str, list[dict[str, Any]]]) -> Iterator[None]:
    endpoint: Any = Endpoint
    original = endpoint._do_get_response

    def recorded(self: Endpoint, request: Any, operation_model: Any, context: Any) -> Any:
        outcome = original(self, request, operation_model, context)
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        success = outcome[0]
        if function and success is not None:
            http = success[0]
            into[function].append(
                {
                    "operation": operation_model.name,
                    "key": request_key(request.body),
                    "status": http.status_code,
                    "headers": dict(http.headers),
                    "body": base64.b64encode(http.content).decode(),
                }
            )
        return outcome

    endpoint._do_get_response = recorded
    try:
        yield
    finally:
        endpoint._do_get_response = original


def capture(path: Path) -> dict[str, Any]:
    """Runs ten incidents at once (``drive_fleet``: each stage's batches hold ten distinct runs, as at scale)
    and writes what each stage saw to ``path`` (JSON)."""
    from intentbus_local import direct_calls
    from intentbus_local.cloud import LocalCloud
    from intentbus_local.lambda_runtime import Invocation
    from tests.bench.aws_calls import STAGE_OF_FUNCTION, drive_fleet

    records: dict[str, list[dict[str, Any]]] = defaultdict(list)
    responses: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with LocalCloud(mode="inprocess") as cloud:
        functions = {
            logical: info
            for logical, info in cloud.topology.functions.items()
            if logical in STAGE_OF_FUNCTION
        }

        def observe(invocation: Invocation) -> None:
            if invocation.function_logical_id in STAGE_OF_FUNCTION:
                records[invocation.function_logical_id].extend(invocation.event["Records"])

        cloud.add_observer(observe)
        with direct_calls.over_http():  # the responses are recorded off the wire
            drive_fleet(cloud, _responses_recorded(responses))
        captured = {
            STAGE_OF_FUNCTION[logical]: {
                "function_name": info.name,
                "function_arn": info.arn,
                "code_dir": str(info.code_dir),
                "environment": _lambda_environment(info.environment),
                "records": records[logical],
                "responses": responses[info.name],
            }
            for logical, info in functions.items()
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(captured))
    return captured


def _lambda_environment(environment: Any) -> dict[str, str]:
    """The function's variables less the local cloud's own (its clock offset, endpoints)."""
    return {
        name: str(value)
        for name, value in dict(environment).items()
        if not name.startswith(("INTENTBUS_LOCAL", "AWS_ENDPOINT"))
    }
