"""Model agents on Amazon Bedrock: the Converse API with tool use, one tool per offered command.

The tools are generated from the command models (``intentbus.agents.tool_schemas``); the answer's
``toolUse`` blocks are validated with pydantic before they become a proposal. An answer that does
not validate (a bad tool input, text only, cut off at ``max_tokens``) raises ``MalformedDecision``;
the decide stage asks for one repair, which shows the model its refused answer and the error.

Throttling and other transient errors are retried here, with ``min(t_max, t_base * 2**attempt)``
plus jitter, and botocore's own retries are off for this client so the two do not multiply. The
client is created on the first call, never at import.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionError, ReadTimeoutError
from pydantic import BaseModel

from intentbus.agents.prompt import decision_prompt, repair_note, system_prompt
from intentbus.agents.tool_schemas import input_schema
from intentbus.agents.toolkit import ToolCall, Toolkit
from intentbus.bedrock_settings import BedrockSettings
from intentbus.definition import Agent, Decision, DecisionContext, MalformedDecision, ModelAgent, TokenUsage
from intentbus.repair import RepairRequest

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
    from mypy_boto3_bedrock_runtime.type_defs import ConverseRequestTypeDef

logger = logging.getLogger(__name__)

RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelNotReadyException",
        "ModelTimeoutException",
    }
)
COMPLETE_STOPS = frozenset({"tool_use", "end_turn", "stop_sequence"})
"""Stop reasons of a finished answer; any other (``max_tokens``, ``malformed_tool_use``...) is malformed."""

CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 1},  # retried by ``Converse`` below, with backoff
    connect_timeout=3,
    read_timeout=25,
)

ClientSource = Callable[[], "BedrockRuntimeClient"]
"""Gives the client on first use: a factory, so nothing connects or reads credentials at import."""


def bedrock_client(settings: BedrockSettings) -> BedrockRuntimeClient:
    import boto3

    client: BedrockRuntimeClient = boto3.session.Session().client(
        "bedrock-runtime", region_name=settings.region, config=CLIENT_CONFIG
    )
    return client


@dataclass(frozen=True)
class Backoff:
    """Retries of throttled or unavailable calls: ``min(max_seconds, base_seconds * 2**attempt) + jitter``."""

    attempts: int = 4
    base_seconds: float = 0.5
    max_seconds: float = 4.0

    def delay(self, attempt: int, jitter: float) -> float:
        """The wait before retry ``attempt + 1``; ``jitter`` in [0, 1) adds up to one base interval."""
        return min(self.max_seconds, self.base_seconds * 2.0**attempt) + jitter * self.base_seconds


@dataclass
class Converse:
    """One Converse call, retried with backoff on throttling and transient errors."""

    settings: BedrockSettings
    client: ClientSource
    backoff: Backoff = field(default_factory=Backoff)
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random
    calls: int = 0
    """Converse requests sent (retries included), for tests and the benchmark."""
    _client: BedrockRuntimeClient | None = None

    def __call__(
        self,
        *,
        system: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Mapping[str, Any]:
        request: dict[str, Any] = {
            "modelId": self.settings.model_id,
            "system": [{"text": system}],
            "messages": list(messages),
            "inferenceConfig": {
                "maxTokens": max_tokens or self.settings.max_tokens,
                "temperature": self.settings.temperature if temperature is None else temperature,
            },
            "toolConfig": {"tools": list(tools), "toolChoice": {self.settings.tool_choice: {}}},
        }
        if self._client is None:
            self._client = self.client()
        for attempt in range(self.backoff.attempts):
            self.calls += 1
            try:
                response = self._client.converse(**cast("ConverseRequestTypeDef", request))
                return cast(Mapping[str, Any], response)
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                if code not in RETRYABLE_CODES or attempt == self.backoff.attempts - 1:
                    raise
                reason = code
            except (ConnectionError, ReadTimeoutError) as error:
                if attempt == self.backoff.attempts - 1:
                    raise
                reason = type(error).__name__
            delay = self.backoff.delay(attempt, self.jitter())
            logger.warning(
                "bedrock call failed (%s); retrying in %.2f s", reason, delay, extra={"attempt": attempt + 1}
            )
            self.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")


def tool_specs(toolkit: Toolkit) -> list[dict[str, Any]]:
    """The Converse ``toolConfig.tools``: one ``toolSpec`` per offered command."""
    return [
        {
            "toolSpec": {
                "name": offer.name,
                "description": offer.description,
                "inputSchema": {"json": offer.schema},
            }
        }
        for offer in toolkit.offers.values()
    ]


@dataclass
class BedrockAgent:
    """A ``ModelAgent`` answered by a Bedrock model; satisfies ``Agent`` and ``RepairableAgent``."""

    spec: ModelAgent
    converse: Converse

    @property
    def name(self) -> str:
        return self.spec.name

    def decide(self, context: DecisionContext) -> Decision:
        return self._ask(context, [_user({"text": decision_prompt(context)})])

    def repair(self, context: DecisionContext, failure: MalformedDecision) -> Decision:
        """Asks once more, showing the model its refused answer and the validation error."""
        note = repair_note(failure)
        prompt = {"text": decision_prompt(context)}
        answer = _replayable(failure.raw)
        if answer is None:  # cut off, or not this adapter's answer: ask afresh, with the error
            return self._ask(context, [_user(prompt, {"text": note})])
        uses = [block["toolUse"] for block in answer["content"] if "toolUse" in block]
        reply: list[dict[str, Any]]
        if uses:  # every call of the refused answer gets its result: refused, and why
            reply = [
                {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": note}]}} for use in uses
            ]
        else:
            reply = [{"text": note}]
        return self._ask(context, [_user(prompt), answer, _user(*reply)])

    def _ask(self, context: DecisionContext, messages: list[dict[str, Any]]) -> Decision:
        toolkit = Toolkit(context.commands)
        response = self.converse(
            system=system_prompt(self.spec.name, self.spec.instructions, context.workflow),
            messages=messages,
            tools=tool_specs(toolkit),
            max_tokens=self.spec.max_tokens,
            temperature=self.spec.temperature,
        )
        message, stop, tokens = _answer(response)
        raw = {"stopReason": stop, "message": message}
        if stop not in COMPLETE_STOPS:
            limit = self.spec.max_tokens or self.converse.settings.max_tokens
            cut = f" at {limit} output tokens" if stop == "max_tokens" else ""
            raise MalformedDecision(
                f"the answer stopped{cut} before it was complete (stopReason {stop})",
                raw=raw,
                field="stopReason",
                tokens=tokens,
            )
        content = message.get("content", [])
        calls = [
            ToolCall(id=str(use.get("toolUseId", "")), name=str(use.get("name", "")), input=use.get("input"))
            for use in (block["toolUse"] for block in content if isinstance(block.get("toolUse"), dict))
        ]
        text = " ".join(str(block["text"]) for block in content if "text" in block).strip()
        return toolkit.decision(
            agent=self.spec.name,
            calls=calls,
            text=text,
            tokens=tokens,
            raw=raw,
            model=self.converse.settings.model_id,
        )


@dataclass
class BedrockModels:
    """The ``ModelProvider`` the decide stage binds model agents with when Bedrock is configured."""

    converse: Converse
    _agents: dict[int, tuple[ModelAgent, BedrockAgent]] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: BedrockSettings, client: ClientSource | None = None) -> BedrockModels:
        return cls(Converse(settings, client or (lambda: bedrock_client(settings))))

    def agent(self, spec: ModelAgent) -> Agent:
        known = self._agents.get(id(spec))
        if known is None or known[0] is not spec:
            known = (spec, BedrockAgent(spec, self.converse))
            self._agents[id(spec)] = known
        return known[1]


REPAIR_TOOL = "resubmit_event"


@dataclass
class BedrockInputRepairer:
    """Repairs an input event that validate quarantined: shows the model the body and the error."""

    converse: Converse
    instructions: str = (
        "You repair events that another system sent and that failed validation. Change only what the "
        "validation error requires; keep every other field, the ids, the tenant and the type as they are."
    )

    def repair_input(self, request: RepairRequest) -> Mapping[str, Any]:
        tool = _repair_tool(request.payload_model)
        prompt = (
            f"This event was refused by validation (repair attempt {request.attempt}).\n"
            f"Reason: {request.reason}\nField: {request.field or 'unknown'}\n"
            f"<event>\n{request.body}\n</event>\n"
            f"Call {REPAIR_TOOL} with the corrected detail."
        )
        response = self.converse(system=self.instructions, messages=[_user({"text": prompt})], tools=[tool])
        message, stop, tokens = _answer(response)
        raw = {"stopReason": stop, "message": message}
        for block in message.get("content", []):
            use = block.get("toolUse")
            if stop in COMPLETE_STOPS and isinstance(use, dict) and use.get("name") == REPAIR_TOOL:
                detail = use.get("input", {}).get("detail") if isinstance(use.get("input"), dict) else None
                if isinstance(detail, dict):
                    return detail
        raise MalformedDecision(
            f"the repair answer has no complete {REPAIR_TOOL} call with a detail object (stopReason {stop})",
            raw=raw,
            tokens=tokens,
        )


def _repair_tool(payload_model: type[BaseModel] | None) -> dict[str, Any]:
    payload = input_schema(payload_model) if payload_model is not None else {"type": "object"}
    detail = {
        "type": "object",
        "description": "The whole corrected event detail: its envelope fields and its payload.",
        "properties": {"payload": payload},
        "required": ["payload"],
    }
    schema = {
        "type": "object",
        "properties": {"detail": detail},
        "required": ["detail"],
        "additionalProperties": False,
    }
    return {
        "toolSpec": {
            "name": REPAIR_TOOL,
            "description": "Resubmit the event with its detail corrected; it is validated again.",
            "inputSchema": {"json": schema},
        }
    }


def _user(*content: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def _answer(response: Mapping[str, Any]) -> tuple[dict[str, Any], str, TokenUsage]:
    message = dict(response.get("output", {}).get("message") or {"role": "assistant", "content": []})
    usage = response.get("usage", {})
    tokens = TokenUsage(
        input_tokens=int(usage.get("inputTokens", 0)), output_tokens=int(usage.get("outputTokens", 0))
    )
    return message, str(response.get("stopReason", "")), tokens


def _replayable(raw: Any) -> dict[str, Any] | None:
    """The refused answer as an assistant turn to show again, when it is complete and has content."""
    if not isinstance(raw, Mapping) or raw.get("stopReason") not in COMPLETE_STOPS:
        return None
    message = raw.get("message")
    if not isinstance(message, Mapping) or not message.get("content"):
        return None
    try:
        json.dumps(message)
    except (TypeError, ValueError):
        return None
    return {"role": "assistant", "content": list(message["content"])}
