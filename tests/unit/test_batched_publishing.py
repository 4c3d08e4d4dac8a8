"""A batch's facts go out together at its end, in as few PutEvents requests as AWS's limits allow, and a
record is acknowledged only when every fact it published was accepted (intentbus.outbox)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.adapters.eventbridge_bus import MAX_REQUEST_BYTES, EventBridgeBus
from intentbus.envelope import Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.handler import SqsStageHandler
from intentbus.journal import Outcome
from intentbus.outbox import Outbox
from intentbus.stages.common import StageResult
from tests.unit.test_telemetry import TENANT, TRACE, sqs_record

REFUSED = "refused-by-eventbridge"
"""A fact whose payload holds this is refused by the fake EventBridge, entry by entry, every time."""
UNREACHABLE = "request-fails"
"""A request holding a fact with this fails whole (after botocore's own retries)."""


class FakeEventBridge:
    def __init__(self) -> None:
        self.requests: list[list[dict[str, Any]]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.requests.append(Entries)
        if any(UNREACHABLE in entry["Detail"] for entry in Entries):
            raise ConnectionError("EventBridge could not be reached")
        results = [
            {"ErrorCode": "InternalFailure", "ErrorMessage": "try again"}
            if REFUSED in entry["Detail"]
            else {"EventId": "accepted"}
            for entry in Entries
        ]
        failed = sum("ErrorCode" in result for result in results)
        return {"FailedEntryCount": failed, "Entries": results}

    def ids_sent(self) -> list[str]:
        return [json.loads(entry["Detail"])["id"] for request in self.requests for entry in request]


class PublishingCore:
    """A stage core whose record publishes ``facts`` facts, each with a payload of ``bytes`` characters
    (and ``mark`` in it), as its body says."""

    def __init__(self, bus: EventBridgeBus) -> None:
        self.bus = bus

    def handle(self, body: str, message_id: str | None = None) -> StageResult:
        asked = json.loads(body)
        outputs = [
            _fact(f"{message_id}-{index}", "x" * asked.get("bytes", 10) + asked.get("mark", ""))
            for index in range(asked["facts"])
        ]
        self.bus.publish(outputs)
        return StageResult(outcome=Outcome.APPLIED, published=tuple(outputs))

    def reject(self, error: MalformedInput, body: str, message_id: str | None = None) -> StageResult:
        raise AssertionError(f"nothing here is malformed: {error.reason}")

    def bind(self, context: LambdaContext) -> None:
        return None


def _fact(fact_id: str, blob: str) -> Envelope:
    return Envelope(
        id=fact_id,
        source="intentbus.pipeline",
        type="EventAccepted",
        time=datetime(2026, 1, 1, tzinfo=UTC),
        kind=Kind.EVENT,
        tenant_id=TENANT,
        trace_id=TRACE,
        run_id="run-1",
        step_index=0,
        correlation_id="run-1",
        payload={"blob": blob},
    )


def _handle(*bodies: dict[str, Any]) -> tuple[dict[str, Any], FakeEventBridge]:
    events = FakeEventBridge()
    bus = EventBridgeBus(
        "pipeline",
        events,  # type: ignore[arg-type]
        max_attempts=3,
        sleep=lambda seconds: None,
        outbox=Outbox(),
    )
    handler = SqsStageHandler(
        "validate",
        build=lambda runtime: PublishingCore(bus),
        logger=Logger(service="unit-outbox"),
        tracer=None,
        metrics=Metrics(service="unit-outbox"),
        runtime=lambda: None,  # type: ignore[arg-type, return-value]
        events=bus,
    )
    records = [sqs_record(f"m{number}", json.dumps(body)) for number, body in enumerate(bodies)]
    response = handler.handle_batch({"Records": records}, None)  # type: ignore[arg-type]
    return dict(response), events


def _failed(response: dict[str, Any]) -> list[str]:
    return [failure["itemIdentifier"] for failure in response["batchItemFailures"]]


def test_a_batchs_facts_go_out_in_one_request_after_every_record_is_handled() -> None:
    response, events = _handle(*({"facts": 1} for _ in range(10)))
    assert _failed(response) == []
    assert len(events.requests) == 1
    assert events.ids_sent() == [f"m{number}-0" for number in range(10)]


def test_a_fact_eventbridge_keeps_refusing_fails_exactly_its_record() -> None:
    # the attack on "nothing is lost": acknowledging m1 would drop its fact for good
    response, events = _handle({"facts": 2}, {"facts": 2, "mark": REFUSED}, {"facts": 1})
    assert _failed(response) == ["m1"]
    assert len(events.requests) == 3  # the batch, then the refused entries twice more (backoff)
    assert events.requests[1] == events.requests[2]
    assert [json.loads(entry["Detail"])["id"] for entry in events.requests[1]] == ["m1-0", "m1-1"]


def test_a_fact_accepted_on_a_retry_fails_no_record() -> None:
    class Flaky(FakeEventBridge):
        def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
            if not self.requests:
                self.requests.append(Entries)
                results: list[dict[str, Any]] = [{"EventId": "a"} for _ in Entries]
                results[-1] = {"ErrorCode": "ThrottlingException", "ErrorMessage": "slow down"}
                return {"FailedEntryCount": 1, "Entries": results}
            return super().put_events(Entries)

    events = Flaky()
    bus = EventBridgeBus("pipeline", events, sleep=lambda seconds: None, outbox=Outbox())  # type: ignore[arg-type]
    with bus.outbox.batch():  # type: ignore[union-attr]
        for record in ("a", "b"):
            with bus.outbox.record(record):  # type: ignore[union-attr]
                bus.publish([_fact(f"{record}-0", "x")])
        assert bus.send_held() == {}
    assert events.ids_sent() == ["a-0", "b-0", "b-0"]


def test_a_record_with_more_than_ten_facts_is_split_across_requests() -> None:
    response, events = _handle({"facts": 3}, {"facts": 12})
    assert _failed(response) == []
    assert [len(request) for request in events.requests] == [10, 5]
    assert events.ids_sent() == ["m0-0", "m0-1", "m0-2"] + [f"m1-{index}" for index in range(12)]


def test_facts_over_256_kb_together_are_split_across_requests() -> None:
    a_third = MAX_REQUEST_BYTES // 3
    response, events = _handle({"facts": 2, "bytes": a_third}, {"facts": 2, "bytes": a_third})
    assert _failed(response) == []
    assert [len(request) for request in events.requests] == [2, 2]
    for request in events.requests:
        assert sum(len(entry["Detail"]) for entry in request) < MAX_REQUEST_BYTES


def test_a_failed_request_fails_only_the_records_with_facts_in_it() -> None:
    # m0 and m1 fill the first request; m2's facts, one of them unsendable, travel in the second
    response, events = _handle({"facts": 6}, {"facts": 4}, {"facts": 2, "mark": UNREACHABLE}, {"facts": 1})
    assert _failed(response) == ["m2", "m3"]
    assert [len(request) for request in events.requests] == [10, 3]


def test_a_record_split_across_requests_fails_when_either_part_does() -> None:
    response, _ = _handle({"facts": 9}, {"facts": 3, "mark": REFUSED})
    assert _failed(response) == ["m1"]


def test_without_a_batch_open_the_bus_publishes_at_once() -> None:
    events = FakeEventBridge()
    bus = EventBridgeBus("pipeline", events, outbox=Outbox())  # type: ignore[arg-type]
    bus.publish([_fact("now", "x")])
    assert events.ids_sent() == ["now"]
