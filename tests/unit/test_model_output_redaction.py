"""A model's output never reaches a log line, a trace or a quarantine reason raw: they carry the
validation errors and the output's size and sha256; the output itself is kept only in the quarantined
message's ``raw_output`` field, which ``intentbus quarantine show --raw-output`` prints on request.

Driven through the Bedrock adapter (botocore's Stubber), the decide stage's Lambda handler with real
Powertools (its log lines captured, the X-Ray SDK sending to memory), the SQS quarantine adapter and
the CLI.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.stub import Stubber

from intentbus import facts
from intentbus.adapters.bedrock_agent import BedrockAgent
from intentbus.adapters.sqs_quarantine import MAX_MESSAGE_BYTES, SqsQuarantine
from intentbus.definition import MalformedDecision
from intentbus.handler import SqsStageHandler
from intentbus.registry import REDACTED
from intentbus.testing import InMemoryPipeline, VirtualClock, bus_body
from intentbus.workflows import incident
from intentbus_cli import ops
from intentbus_cli.main import main
from intentbus_cli.quarantined import RAW_OUTPUT_HIDDEN
from tests.unit.fake_queues import FakeQueues
from tests.unit.test_bedrock_agent import (
    TENANT,
    bedrock_pipeline,
    converse_for,
    converse_response,
    diagnostics,
    latency_accepted,
    stubbed_client,
    text,
    tool_use,
    triage_context,
)
from tests.unit.test_telemetry import Traced, sqs_record, traced  # noqa: F401

CARD = "4111 1111 1111 1111"
TOKEN = "sk_live_9fQ2xR7mTz4LbW1c"
SECRETS = (CARD, TOKEN, "4111111111111111")
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/quarantine"

ECHOED_CARD = [text(f"The customer paid with card {CARD}; their API key is {TOKEN}. I would wait.")]
"""Text only: no tool call, so nothing of it is a field the type registry could redact."""
BAD_TOOL_INPUT = [
    tool_use(
        "collect_diagnostics",
        {**diagnostics(), "window_minutes": CARD, "4111111111111111": TOKEN},
        rationale=f"the customer's card {CARD} was declined",
        evidence={"api_key": TOKEN},
    )
]
"""A call whose errors pydantic would tell with the input: a value of the wrong type, an unknown key."""
UNKNOWN_TOOL = [{"toolUse": {"toolUseId": "tooluse_1", "name": TOKEN, "input": {"card": CARD}}}]
"""A call of a tool named with the secret."""
VALID_ANSWER = [
    tool_use(
        "collect_diagnostics",
        diagnostics(),
        rationale=f"p99 is far over threshold; the customer's card {CARD} was declined",
        evidence={"api_key": TOKEN, "p99_ms": 1450},
    )
]
"""A valid decision whose rationale and evidence echo the secrets."""

INVALID = pytest.mark.parametrize(
    ("answer", "stop"),
    [
        (ECHOED_CARD, "end_turn"),
        (BAD_TOOL_INPUT, "tool_use"),
        (UNKNOWN_TOOL, "tool_use"),
        (ECHOED_CARD, "max_tokens"),
    ],
    ids=["text-only", "bad-tool-input", "unknown-tool", "cut-off"],
)


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


@dataclass
class RecordingSqs:
    """The SQS client's SendMessage, recorded: what the quarantine adapter really sends."""

    sent: list[dict[str, Any]] = field(default_factory=list)

    def send_message(self, **request: Any) -> dict[str, str]:
        self.sent.append(request)
        return {"MessageId": f"q-{len(self.sent)}"}


@dataclass
class Decide:
    """The decide stage's handler over the Bedrock adapter, with everything it writes captured."""

    pipeline: InMemoryPipeline
    stubber: Stubber
    handler: SqsStageHandler
    traced: Traced
    caplog: pytest.LogCaptureFixture
    sqs: RecordingSqs

    def run(self, *answers: tuple[list[dict[str, Any]], str]) -> str:
        for content, stop in answers:
            self.stubber.add_response("converse", converse_response(content, stop=stop), None)
        body = bus_body(latency_accepted(self.pipeline))
        response = self.handler.handle_batch(
            {"Records": [sqs_record("m-1", body)]}, cast(LambdaContext, None)
        )
        assert response == {"batchItemFailures": []}
        self.stubber.assert_no_pending_responses()
        return body

    def log_lines(self) -> list[dict[str, Any]]:
        return self.traced.lines()

    def everything_logged(self) -> str:
        """Powertools' lines, and every standard logging record with its extra fields."""
        records = [
            {**vars(record), "formatted": record.getMessage()}
            for record in self.caplog.records
            if record.name != "botocore.stub"
        ]
        return self.traced.log.getvalue() + json.dumps(records, default=str)

    def everything_traced(self) -> str:
        return json.dumps(self.traced.capture.entities(), default=str)

    def quarantined(self) -> dict[str, Any]:
        (request,) = self.sqs.sent
        record: dict[str, Any] = json.loads(request["MessageBody"])
        return record


@pytest.fixture
def decide(traced: Traced, caplog: pytest.LogCaptureFixture) -> Iterator[Decide]:  # noqa: F811
    caplog.set_level(logging.DEBUG)
    client = stubbed_client()
    pipeline, _ = bedrock_pipeline(client)
    sqs = RecordingSqs()
    pipeline.deps.quarantine = SqsQuarantine(QUEUE_URL, cast(Any, sqs), pipeline.clock)
    handler = SqsStageHandler(
        "decide",
        build=lambda runtime: pipeline.stages["decide"],
        logger=traced.logger,
        tracer=traced.tracer,
        metrics=traced.metrics,
        runtime=lambda: None,  # type: ignore[arg-type, return-value]
        types=pipeline.catalog.types,
    )
    with Stubber(client) as stubber:
        yield Decide(pipeline, stubber, handler, traced, caplog, sqs)


# --------------------------------------------------------------------------------- the adapter


@INVALID
def test_the_adapter_s_refusal_names_the_problems_and_keeps_the_output_apart(
    answer: list[dict[str, Any]], stop: str
) -> None:
    """The attack: the model echoes a card number and a secret in its answer (as text, as tool input, as
    a key, as a tool's name); the adapter's refusal (reason and field), which is logged, holds neither."""
    client = stubbed_client()
    agent = BedrockAgent(incident.TRIAGE, converse_for(client))
    with Stubber(client) as stubber:
        stubber.add_response("converse", converse_response(answer, stop=stop), None)
        with pytest.raises(MalformedDecision) as caught:
            agent.decide(triage_context())

    assert leaked(f"{caught.value.reason} {caught.value.field}") == []
    assert caught.value.raw == {"stopReason": stop, "message": {"role": "assistant", "content": answer}}


# --------------------------------------------------------------------------------- the handler


@INVALID
def test_an_invalid_answer_reaches_no_log_trace_or_reason_only_the_raw_output_field(
    decide: Decide, answer: list[dict[str, Any]], stop: str
) -> None:
    """The attack: the model echoes a card number and a secret (text the type registry's field redaction
    cannot reach, since the answer never became a payload), twice: the answer and the repair. Logs, the
    X-Ray subsegment and the quarantine reason carry the validation errors and the output's size and
    sha256; the quarantined message keeps the output in ``raw_output``, and only there."""
    decide.run((answer, stop), (answer, stop))

    assert leaked(decide.everything_logged()) == []
    assert leaked(decide.everything_traced()) == []
    record = decide.quarantined()
    (request,) = decide.sqs.sent
    assert leaked(json.dumps(request["MessageAttributes"])) == []
    assert leaked(json.dumps({key: value for key, value in record.items() if key != "raw_output"})) == []

    raw_output = record["raw_output"]
    assert [secret for secret in SECRETS if secret in json.dumps(json.loads(raw_output))] != []
    message = {"role": "assistant", "content": answer}
    assert json.loads(raw_output) == [{"stopReason": stop, "message": message}] * 2
    digest = hashlib.sha256(raw_output.encode()).hexdigest()
    assert (record["raw_output_sha256"], record["raw_output_bytes"]) == (digest, len(raw_output.encode()))
    fingerprint = f"raw output of 2 attempt(s): {len(raw_output)} bytes, sha256 {digest}"
    assert record["reason"].endswith(fingerprint)
    assert record["body"] == json.loads(request["MessageBody"])["body"]  # the input, redrivable as it is

    (processed,) = [line for line in decide.log_lines() if line["message"] == "record processed"]
    assert (processed["outcome"], processed["reason"]) == ("quarantined", record["reason"])
    (warning,) = [r for r in decide.caplog.records if r.getMessage() == "decision quarantined"]
    assert vars(warning)["raw_output_sha256"] == digest
    (span,) = [e for e in decide.traced.records() if e["name"] == "## decide record"]
    assert span["metadata"]["intentbus"]["record"]["reason"] == record["reason"]


def test_a_valid_decision_s_rationale_and_evidence_stay_out_of_logs_and_traces(decide: Decide) -> None:
    """The attack: a valid decision whose rationale and evidence echo a card number and a secret. They are
    recorded in the run's log and published to approvers (by design), and a DEBUG log line of the
    payloads shows them redacted; no log line or trace carries them."""
    decide.run((VALID_ANSWER, "tool_use"))

    assert leaked(decide.everything_logged()) == []
    assert leaked(decide.everything_traced()) == []
    assert decide.sqs.sent == []
    (proposed,) = [e for e in decide.pipeline.bus.published if e.type == facts.COMMAND_PROPOSED]
    assert CARD in proposed.payload["rationale"], "what approvers are shown keeps the agent's words"
    entry = decide.pipeline.store.entries(TENANT, proposed.run_id)[-1]
    assert entry.summary["decision"]["evidence"]["api_key"] == TOKEN, "and so does the run's log"
    (debug,) = [line for line in decide.log_lines() if line["message"] == "record payloads"]
    (published,) = debug["published_payloads"]
    assert (published["payload"]["rationale"], published["payload"]["evidence"]) == (REDACTED, REDACTED)
    assert published["payload"]["confidence"] == 0.82


# ------------------------------------------------------------------------------------- the CLI


def test_quarantine_show_prints_the_raw_output_only_when_asked(
    decide: Decide, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The attack: an operator lists or shows the quarantined decision (its output echoes a card number
    and a secret): ``list`` and plain ``show`` print neither, ``show --raw-output`` prints the output."""
    decide.run((BAD_TOOL_INPUT, "tool_use"), (ECHOED_CARD, "end_turn"))
    queues = FakeQueues()
    message_id = queues.put(QUEUE_URL, decide.sqs.sent[0]["MessageBody"])
    monkeypatch.setattr(ops, "_sqs", lambda args, target: queues)
    where = ["--queue", QUEUE_URL, "--wait-seconds", "0"]
    capsys.readouterr()

    assert main(["quarantine", "list", *where]) == 0
    listed = capsys.readouterr().out
    assert "raw output of 2 attempt(s)" in listed
    assert leaked(listed) == []

    assert main(["quarantine", "show", message_id, *where]) == 0
    shown = capsys.readouterr().out
    assert leaked(shown) == []
    record = json.loads(shown)["body"]
    assert record["raw_output"] == RAW_OUTPUT_HIDDEN
    assert record["raw_output_sha256"] == decide.quarantined()["raw_output_sha256"]

    assert main(["quarantine", "show", message_id, "--raw-output", *where]) == 0
    revealed = json.loads(capsys.readouterr().out)["body"]["raw_output"]
    first, second = revealed
    assert first["message"]["content"] == BAD_TOOL_INPUT
    assert second["message"]["content"] == ECHOED_CARD
    assert set(leaked(json.dumps(revealed, ensure_ascii=False))) == set(SECRETS)


# --------------------------------------------------------------------------- the quarantine queue


def test_a_raw_output_too_big_for_the_message_is_cut_before_the_body() -> None:
    """The body is what a redrive needs; the raw output is cut first, its true size and hash kept."""
    sqs = RecordingSqs()
    body = json.dumps({"detail": {"id": "e-1", "payload": {"note": "x" * 1000}}})
    raw_output = json.dumps([{"text": "y" * (300 * 1024)}])

    SqsQuarantine(QUEUE_URL, cast(Any, sqs), VirtualClock()).put(
        stage="decide", reason="why", field=None, body=body, message_id="m-1", raw_output=raw_output
    )

    (request,) = sqs.sent
    assert len(request["MessageBody"].encode()) <= MAX_MESSAGE_BYTES
    record = json.loads(request["MessageBody"])
    assert (record["body"], record["body_truncated"]) == (body, False)
    assert record["raw_output_truncated"] is True
    assert raw_output.startswith(record["raw_output"])
    assert record["raw_output_bytes"] == len(raw_output)
    assert record["raw_output_sha256"] == hashlib.sha256(raw_output.encode()).hexdigest()
