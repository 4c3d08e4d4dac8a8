"""Boundary 3: the Lambda handler (SqsStageHandler over the validate core) fed odd SQS events.

Records of the real Lambda shape, with attributes absent or odd, empty or missing bodies, bodies of
the wrong type. The handler returns ``batchItemFailures``; every record is either processed
(quarantined or applied: the core saw it and said so) or listed by its messageId; nothing is
silently dropped; one bad record never fails its neighbours.

Records Lambda would never send:

* no ``body`` (or a body that is not a string): it can never be processed, so it is malformed and
  quarantined (field ``body``) like any malformed input, not retried into the DLQ.
* no ``messageId``: it cannot be named in batchItemFailures, but nothing else needs the id, so it
  is processed like any other record (quarantine records ``message_id=None``); only if its
  processing fails does the whole invocation fail (the only way not to drop it).
"""

from __future__ import annotations

import copy
import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import aws_xray_sdk
import pytest
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from intentbus.errors import MalformedInput
from intentbus.handler import SqsStageHandler, UnnamedRecordFailed
from intentbus.journal import Outcome
from intentbus.stages.common import StageCore, StageResult
from intentbus.testing import InMemoryPipeline
from tests.fuzz.support import (
    CHECKPOINTS,
    DEFECT,
    FUZZ,
    JSON_POOL,
    LATENCY,
    SEEDS,
    Decisions,
    decisions,
    dumps,
    new_pipeline,
    type_of,
    wrap,
)

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:intentbus-validate"


@dataclass
class Powertools:
    logger: Logger
    tracer: Tracer
    metrics: Metrics
    log: io.StringIO


@pytest.fixture(scope="module")
def powertools() -> Iterator[Powertools]:
    """Real Powertools, configured as a function's environment would; what it changes globally
    (the X-Ray SDK switch, the logger's propagation) is put back afterwards."""
    tracing_was_enabled = aws_xray_sdk.global_sdk_config.sdk_enabled()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
        patch.setenv("POWERTOOLS_METRICS_NAMESPACE", "fuzz")
        patch.setenv("POWERTOOLS_SERVICE_NAME", "fuzz")
        log = io.StringIO()
        logger = Logger(stream=log)
        # Powertools keeps a service's first handler for every later Logger of that service, so a
        # second use of this fixture in one process (xdist's worksteal) would write to the old stream.
        handler = logger.registered_handler
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(log)
        # Its records go to ``log`` (and are checked there), not also through pytest's log capture.
        patch.setattr(logging.getLogger(logger.service), "propagate", False)
        try:
            yield Powertools(logger, Tracer(), Metrics(), log)
        finally:
            aws_xray_sdk.global_sdk_config.set_sdk_enabled(tracing_was_enabled)


@dataclass
class Spy:
    """The validate core, recording what the handler gave it and what came back."""

    core: StageCore
    calls: list[tuple[str | None, str, StageResult | Exception]] = field(default_factory=list)
    rejected: list[tuple[str | None, str | None]] = field(default_factory=list)

    def bind(self, context: LambdaContext) -> None:
        self.core.bind(context)

    def reject(self, error: MalformedInput, body: str, message_id: str | None = None) -> StageResult:
        result = self.core.reject(error, body, message_id)
        self.rejected.append((message_id, error.field))
        return result

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        try:
            result = self.core.handle(body, message_id)
        except Exception as error:
            self.calls.append((message_id, body, error))
            raise
        self.calls.append((message_id, body, result))
        return result


@dataclass
class Batch:
    pipeline: InMemoryPipeline
    spy: Spy
    records: list[dict[str, Any]]
    response: dict[str, Any] | None
    raised: Exception | None
    log: list[dict[str, Any]]

    @property
    def failed(self) -> list[str]:
        assert self.response is not None
        return [item["itemIdentifier"] for item in self.response["batchItemFailures"]]


def run_batch(powertools: Powertools, records: list[dict[str, Any]]) -> Batch:
    pipeline = new_pipeline()
    spy = Spy(pipeline.stages["validate"])
    handler = SqsStageHandler(
        "validate",
        build=lambda runtime: spy,
        logger=powertools.logger,
        tracer=powertools.tracer,
        metrics=powertools.metrics,
        runtime=lambda: None,  # type: ignore[arg-type, return-value]
    )
    powertools.log.seek(0)
    powertools.log.truncate()
    response: dict[str, Any] | None = None
    raised: Exception | None = None
    try:
        response = dict(handler.handle_batch({"Records": records}, LambdaContext()))
    except Exception as error:
        raised = error
    log = [json.loads(line) for line in powertools.log.getvalue().splitlines() if line.strip()]
    assert all(line.get("service") == "fuzz" for line in log)
    return Batch(pipeline, spy, records, response, raised, log)


# ---------------------------------------------------------------------------------------------
# Records

GOOD_BODIES = (
    *(
        dumps(
            wrap({**LATENCY, "id": f"evt-batch-{n}"}, detail_type=type_of(LATENCY)), ensure_ascii=n % 2 == 0
        )
        for n in range(4)
    ),
    dumps(wrap(SEEDS["seed_tool_call"], detail_type=type_of(SEEDS["seed_tool_call"])), ensure_ascii=False),
)
MALFORMED_BODIES = (
    "",
    " ",
    "{",
    "null",
    "[]",
    "\ufeff{}",
    '{"detail-type": "ServiceLatencyIncreased"}',
    dumps(wrap({**LATENCY, "tenant_id": "has space"}, detail_type=type_of(LATENCY)), ensure_ascii=True),
    dumps(wrap(LATENCY, detail_type=type_of(LATENCY), source="intentbus.pipeline"), ensure_ascii=True),
    dumps(wrap({**LATENCY, "kind": "command"}, detail_type=type_of(LATENCY)), ensure_ascii=False),
    CHECKPOINTS["decide"][0].body,  # a pipeline fact, delivered to validate
    CHECKPOINTS["record"][0].body,
    "[" * 100_000 + "]" * 100_000,
    dumps(wrap({**LATENCY, "subject": "x" * 270_000}, detail_type=type_of(LATENCY)), ensure_ascii=True),
)
NOT_STRINGS: tuple[Any, ...] = (None, 7, 1.5, True, [], {}, ["body"], {"body": "x"})
MISSING = "<missing>"
BODY_KINDS = ("good", "malformed", "free", "missing", "not_string")
OPTIONAL_KEYS = (
    "receiptHandle",
    "attributes",
    "messageAttributes",
    "md5OfBody",
    "eventSource",
    "eventSourceARN",
)
ODD_VALUES = (
    MISSING,
    None,
    "",
    7,
    [],
    {},
    {"ApproximateReceiveCount": "x"},
    {"attr": {"stringValue": 1, "dataType": "Number"}},
    *JSON_POOL[:8],
)
free_bodies = st.text()
BATCH_SIZES = (1, 1, 1, 1, 2, 2, 2, 3, 4, 10)
"""Lambda's SQS batches hold 1-10 records; small ones are the common case (and the cheap one)."""


def record(message_id: str | None, body: Any) -> dict[str, Any]:
    """A record of the shape Lambda's SQS event source mapping delivers."""
    out: dict[str, Any] = {
        "messageId": message_id,
        "receiptHandle": f"rh-{message_id}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1791859200000",
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": "1791859200001",
        },
        "messageAttributes": {},
        "md5OfBody": "0" * 32,
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "us-east-1",
    }
    if message_id is None:
        del out["messageId"]
    if body is MISSING:
        del out["body"]
    return out


def _body(choose: Decisions, draw: st.DrawFn, kind: str) -> Any:
    if kind == "good":
        return choose.choice(GOOD_BODIES)
    if kind == "malformed":
        return choose.choice(MALFORMED_BODIES)
    if kind == "free":
        return draw(free_bodies)
    if kind == "missing":
        return MISSING
    return copy.deepcopy(choose.choice(NOT_STRINGS))


BATCH_DECISIONS = decisions(1 + 10 * 10)


@st.composite
def batches(
    draw: st.DrawFn, *, without_ids: bool = False, string_bodies: bool = False
) -> list[dict[str, Any]]:
    """1-10 records: good, malformed, free text, without a body or with a body of the wrong type;
    their attributes absent or odd. ``without_ids``: some records have no messageId."""
    choose = draw(BATCH_DECISIONS)
    out = []
    kinds = BODY_KINDS[:3] if string_bodies else BODY_KINDS
    for index in range(choose.choice(BATCH_SIZES)):
        body = _body(choose, draw, choose.choice(kinds))
        message_id = None if without_ids and choose.flag() else f"msg-{index}"
        item = record(message_id, body)
        for _ in range(choose.below(3)):
            key = choose.choice(OPTIONAL_KEYS)
            value = choose.choice(ODD_VALUES)
            if isinstance(value, str) and value == MISSING:
                item.pop(key, None)
            else:
                item[key] = copy.deepcopy(value)
        if choose.below(4) == 0:
            item["unknownKey"] = copy.deepcopy(choose.choice(JSON_POOL))
        out.append(item)
    return out


def _has_string_body(item: dict[str, Any]) -> bool:
    return isinstance(item.get("body"), str)


HANDLER = settings(FUZZ, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def check_processed(batch: Batch) -> None:
    """Every record with a body was processed exactly once, as itself, and the effects add up."""
    handled = [call for call in batch.spy.calls if not isinstance(call[2], Exception)]
    errors = [(m, b, e) for m, b, e in batch.spy.calls if isinstance(e, Exception) and isinstance(b, str)]
    assert not errors, f"the core raised on {[(m, type(e).__name__, e) for m, _, e in errors]}"
    with_bodies = [item for item in batch.records if _has_string_body(item)]
    assert sorted((m or "", b) for m, b, _ in handled) == sorted(
        (item.get("messageId") or "", item["body"]) for item in with_bodies
    )
    results = [result for _, _, result in handled if isinstance(result, StageResult)]
    quarantined = [r for r in results if r.outcome is Outcome.QUARANTINED]
    quarantine = batch.pipeline.quarantine.records
    for message_id, _, result in handled:
        if isinstance(result, StageResult) and result.outcome is Outcome.QUARANTINED:
            assert any(q["message_id"] == message_id for q in quarantine), message_id
    assert len(quarantine) >= len(quarantined)
    assert len(batch.pipeline.bus.published) == sum(len(r.published) for r in results)
    processed_logs = [line for line in batch.log if line.get("message") == "record processed"]
    assert len(processed_logs) == len(handled) + len(batch.spy.rejected)


@HANDLER
@given(records=batches())
def test_every_record_is_processed_or_listed_and_never_fails_its_neighbours(
    powertools: Powertools, records: list[dict[str, Any]]
) -> None:
    batch = run_batch(powertools, records)
    assert batch.raised is None, repr(batch.raised)
    assert batch.response == {"batchItemFailures": []}, "a record was failed"
    without_body = [item["messageId"] for item in records if not _has_string_body(item)]
    assert sorted(batch.spy.rejected) == sorted((message_id, "body") for message_id in without_body)
    quarantined_ids = [q["message_id"] for q in batch.pipeline.quarantine.records]
    for message_id in without_body:
        assert message_id in quarantined_ids, "a record without a body was dropped"
    check_processed(batch)
    rejected = [line for line in batch.log if line.get("message") == "record processed"]
    assert len(rejected) == len(records)


@settings(HANDLER, max_examples=300)
@given(records=batches(without_ids=True, string_bodies=True))
def test_a_record_without_a_message_id_is_never_silently_dropped(
    powertools: Powertools, records: list[dict[str, Any]]
) -> None:
    batch = run_batch(powertools, records)
    if batch.raised is not None:
        return  # the whole batch is retried: nothing is lost
    assert batch.response is not None
    assert set(batch.failed) <= {item["messageId"] for item in records if "messageId" in item}
    check_processed(batch)


def test_a_batch_of_records_without_bodies_is_quarantined_whole(powertools: Powertools) -> None:
    batch = run_batch(powertools, [record("msg-0", MISSING), record("msg-1", None)])
    assert batch.response == {"batchItemFailures": []}
    assert [(q["message_id"], q["field"], q["body"]) for q in batch.pipeline.quarantine.records] == [
        ("msg-0", "body", ""),
        ("msg-1", "body", "null"),
    ]


def test_a_failing_record_without_a_message_id_fails_the_invocation_so_sqs_retries_the_batch(
    powertools: Powertools,
) -> None:
    pipeline = new_pipeline()

    class Broken(Spy):
        def handle(self, body: str, message_id: str | None = None) -> StageResult:
            raise RuntimeError("the store is down")

    handler = SqsStageHandler(
        "validate",
        build=lambda runtime: Broken(pipeline.stages["validate"]),
        logger=powertools.logger,
        tracer=powertools.tracer,
        metrics=powertools.metrics,
        runtime=lambda: None,  # type: ignore[arg-type, return-value]
    )
    with pytest.raises(UnnamedRecordFailed):
        handler.handle_batch(
            {"Records": [record("msg-0", GOOD_BODIES[0]), record(None, GOOD_BODIES[1])]}, LambdaContext()
        )


def test_an_empty_body_is_quarantined_not_retried(powertools: Powertools) -> None:
    batch = run_batch(powertools, [record("msg-0", ""), record("msg-1", GOOD_BODIES[0])])
    assert batch.response == {"batchItemFailures": []}
    assert [q["message_id"] for q in batch.pipeline.quarantine.records] == ["msg-0"]
    assert len(batch.pipeline.bus.published) == 1


# ---------------------------------------------------------------------------------------------
# Records Lambda would never send


@settings(DEFECT, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(body=st.sampled_from([MISSING, *NOT_STRINGS]), neighbour=st.sampled_from(GOOD_BODIES))
@example(body=MISSING, neighbour=GOOD_BODIES[0])
def test_a_record_without_a_body_is_quarantined_not_retried(
    powertools: Powertools, body: Any, neighbour: str
) -> None:
    batch = run_batch(powertools, [record("msg-0", neighbour), record("msg-1", body)])
    assert batch.raised is None, repr(batch.raised)
    assert batch.failed == []
    assert [(q["message_id"], q["field"]) for q in batch.pipeline.quarantine.records] == [("msg-1", "body")]


@settings(DEFECT, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(body=st.sampled_from((*GOOD_BODIES, *MALFORMED_BODIES[:10])), neighbour=st.sampled_from(GOOD_BODIES))
@example(body=MALFORMED_BODIES[2], neighbour=GOOD_BODIES[0])
def test_a_record_without_a_message_id_is_processed_and_fails_no_neighbour(
    powertools: Powertools, body: str, neighbour: str
) -> None:
    batch = run_batch(powertools, [record("msg-0", neighbour), record(None, body)])
    assert batch.raised is None, repr(batch.raised)
    assert batch.failed == []
    check_processed(batch)
