"""A Bedrock runtime client under botocore's Stubber, shared with functions run in this process.

A test queues the model's answers (``answer_with_repair``, ``answer_with``, ``fail_with``); the repair
function of ``tests/e2e/fixture_functions/repair_stubbed`` calls Converse on ``MODEL.client``, and the
Stubber checks each request against the real API's shape and hands out the next answer in order.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.stub import Stubber

from intentbus_local.lambda_runtime import InvocationCrash

REPAIR_TOOL = "resubmit_event"


class StubbedModel:
    def __init__(self) -> None:
        session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        )
        self.client: Any = session.client("bedrock-runtime")
        self.stubber = Stubber(self.client)
        self.stubber.activate()
        self.requests: list[dict[str, Any]] = []
        self.crash_next = False
        """The next Converse call kills the invocation (the call is made, its answer never read)."""
        self.client.meta.events.register("before-parameter-build.bedrock-runtime.Converse", self._seen)

    def _seen(self, params: dict[str, Any], **_: Any) -> None:
        self.requests.append(params)
        if self.crash_next:
            self.crash_next = False
            raise InvocationCrash("the repair function's sandbox died while the model was asked")

    def reset(self) -> None:
        self.stubber.deactivate()
        self.stubber = Stubber(self.client)
        self.stubber.activate()
        self.requests.clear()
        self.crash_next = False

    def answer_with(self, content: list[dict[str, Any]], *, stop: str = "tool_use") -> None:
        self.stubber.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": content}},
                "stopReason": stop,
                "usage": {"inputTokens": 900, "outputTokens": 120, "totalTokens": 1020},
                "metrics": {"latencyMs": 640},
            },
            None,
        )

    def answer_with_repair(self, detail: dict[str, Any]) -> None:
        self.answer_with(
            [{"toolUse": {"toolUseId": "tooluse_1", "name": REPAIR_TOOL, "input": {"detail": detail}}}]
        )

    def fail_with(self, code: str = "AccessDeniedException", status: int = 403) -> None:
        self.stubber.add_client_error(
            "converse", service_error_code=code, service_message=code, http_status_code=status
        )


MODEL = StubbedModel()
