"""The producer client: requests within PutEvents' limits, failed entries retried with the seed's backoff,
envelopes validate would quarantine refused before they are sent."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import pytest
from botocore.exceptions import ClientError

from intentbus.catalog import Catalog
from intentbus.envelope import Envelope, Kind
from intentbus.limits import entry_size
from intentbus.producer import (
    MAX_ENTRIES_PER_REQUEST,
    MAX_REQUEST_BYTES,
    Accepted,
    Producer,
    Refused,
    SendError,
)

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_events.type_defs import PutEventsRequestEntryTypeDef

BUS = "intentbus-ingress-test"
SOURCE = "monitoring.example"
TYPES = Catalog.from_modules("intentbus.workflows.incident,intentbus.workflows.direct_tool").types

Fail = Callable[[int, int, "PutEventsRequestEntryTypeDef"], "str | None"]
"""(call number from 1, position in the request, entry) -> an ErrorCode to fail the entry with, or None."""


def _aws_size(entry: PutEventsRequestEntryTypeDef) -> int:
    """AWS's getSize(PutEventsRequestEntry), written out independently of the client's ``entry_size``."""
    size = 14 if "Time" in entry else 0
    size += len(entry["Source"].encode("utf-8")) + len(entry["DetailType"].encode("utf-8"))
    size += len(entry["Detail"].encode("utf-8")) if "Detail" in entry else 0
    return size + sum(len(resource.encode("utf-8")) for resource in entry.get("Resources", []))


class FakeEvents:
    """PutEvents as EventBridge answers it, refusing a request over its limits as EventBridge would."""

    def __init__(self, fail: Fail | None = None, *, raise_on_call: int | None = None) -> None:
        self.requests: list[list[PutEventsRequestEntryTypeDef]] = []
        self._fail = fail
        self._raise_on_call = raise_on_call
        self._next_id = 0

    def put_events(self, *, Entries: Sequence[PutEventsRequestEntryTypeDef]) -> dict[str, Any]:
        entries = list(Entries)
        self.requests.append(entries)
        call = len(self.requests)
        if call == self._raise_on_call:
            raise ClientError(
                {
                    "Error": {
                        "Code": "ResourceNotFoundException",
                        "Message": f"Event bus {BUS} does not exist.",
                    }
                },
                "PutEvents",
            )
        assert 1 <= len(entries) <= 10, "PutEvents takes 1 to 10 entries"
        assert sum(_aws_size(entry) for entry in entries) <= 256 * 1024, "PutEvents takes 256 KB at most"
        results: list[dict[str, str]] = []
        for position, entry in enumerate(entries):
            code = self._fail(call, position, entry) if self._fail else None
            if code is None:
                self._next_id += 1
                results.append({"EventId": f"ev-{self._next_id}"})
            else:
                results.append({"ErrorCode": code, "ErrorMessage": f"{code} for entry {position}"})
        return {"FailedEntryCount": sum("ErrorCode" in r for r in results), "Entries": results}

    def sent_indexes(self) -> list[list[int]]:
        """The ``n`` of every entry sent, request by request (the envelopes carry their index)."""
        return [
            [json.loads(entry["Detail"])["payload"]["n"] for entry in request] for request in self.requests
        ]


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def producer(
    events: FakeEvents, *, types: Any = None, sleep: Sleeps | None = None, **options: Any
) -> Producer:
    return Producer(
        cast("EventBridgeClient", events),
        BUS,
        source=SOURCE,
        types=types,
        sleep=sleep or Sleeps(),
        rng=lambda: 0.5,
        **options,
    )


def envelope(n: int, *, pad: str = "") -> dict[str, Any]:
    return {"tenant_id": "acme", "type": "Anything", "payload": {"n": n, "pad": pad}}


def sized(n: int, size: int) -> dict[str, Any]:
    """An envelope whose PutEvents entry is exactly ``size`` bytes."""
    bare = Producer(cast("EventBridgeClient", FakeEvents()), BUS, source=SOURCE).entry(envelope(n))
    return envelope(n, pad="x" * (size - entry_size(bare)))


def latency(**overrides: Any) -> dict[str, Any]:
    payload = {"service": "checkout-api", "cluster": "shop", "environment": "production", "p99_ms": 1240}
    return {
        "tenant_id": "acme",
        "type": "ServiceLatencyIncreased",
        "payload": {**payload, "threshold_ms": 500},
        **overrides,
    }


# ------------------------------------------------------------------------------------------- entry size


def test_entry_size_counts_what_aws_documents() -> None:
    entry: PutEventsRequestEntryTypeDef = {
        "Source": "crm.éxample",  # é is two bytes in UTF-8
        "DetailType": "T",
        "Detail": '{"a":"€"}',  # € is three
        "Resources": ["arn:aws:s3:::b", "r"],
        "EventBusName": "not counted",
        "TraceHeader": "not counted either",
    }
    assert entry_size(entry) == 12 + 1 + 11 + 14 + 1
    assert entry_size({**entry, "Time": datetime(2026, 1, 1, tzinfo=UTC)}) == 39 + 14


def test_an_entry_is_the_producers_source_the_type_and_the_envelope_as_json() -> None:
    events = FakeEvents()
    report = producer(events).send([{"tenant_id": "acme", "event_type": "Ping", "payload": {"n": "é"}}])

    assert report.ok
    (entry,) = events.requests[0]
    assert entry == {
        "EventBusName": BUS,
        "Source": SOURCE,
        "DetailType": "Ping",
        "Detail": '{"tenant_id":"acme","event_type":"Ping","payload":{"n":"é"}}',
    }


# --------------------------------------------------------------------------------------------- chunking


def test_23_envelopes_go_in_requests_of_10_10_and_3() -> None:
    events = FakeEvents()
    report = producer(events).send(envelope(n) for n in range(23))

    assert events.sent_indexes() == [list(range(10)), list(range(10, 20)), list(range(20, 23))]
    assert [item.index for item in report.accepted] == list(range(23))
    assert len(set(report.event_ids.values())) == 23
    assert report.refused == ()
    assert report.requests == 3
    assert MAX_ENTRIES_PER_REQUEST == 10


def test_requests_are_packed_by_bytes_up_to_exactly_256_kb() -> None:
    half = MAX_REQUEST_BYTES // 2
    events = FakeEvents()
    report = producer(events).send(
        [
            sized(0, half),
            sized(1, half),  # 0 and 1 fill a request to the byte
            sized(2, half),
            sized(3, half + 1),  # one byte too many next to 2
            sized(4, MAX_REQUEST_BYTES),  # alone, exactly at the limit
            sized(5, 1000),
        ]
    )

    assert events.sent_indexes() == [[0, 1], [2], [3], [4], [5]]
    assert [sum(_aws_size(entry) for entry in request) for request in events.requests][:2] == [
        MAX_REQUEST_BYTES,
        half,
    ]
    assert report.ok
    assert len(report.accepted) == 6


def test_multibyte_text_is_counted_in_utf8_bytes_not_characters() -> None:
    # 50,000 three-byte characters: 150 KB on the wire, two such entries are over 256 KB together.
    events = FakeEvents()
    report = producer(events).send([envelope(0, pad="€" * 50_000), envelope(1, pad="€" * 50_000)])

    assert events.sent_indexes() == [[0], [1]]
    assert report.ok


def test_an_entry_over_256_kb_is_refused_and_never_sent() -> None:
    events = FakeEvents()
    report = producer(events).send([envelope(0), sized(1, MAX_REQUEST_BYTES + 1), envelope(2)])

    assert events.sent_indexes() == [[0, 2]]
    (refused,) = report.refused
    assert refused.index == 1
    assert f"the entry is {MAX_REQUEST_BYTES + 1} bytes" in refused.reason
    assert not refused.sent
    assert [item.index for item in report.accepted] == [0, 2]


# -------------------------------------------------------------------------------------------- retries


def test_only_failed_entries_are_resent_after_the_seeds_backoff() -> None:
    def fail(call: int, position: int, entry: PutEventsRequestEntryTypeDef) -> str | None:
        n = json.loads(entry["Detail"])["payload"]["n"]
        if call == 1 and n in (2, 5):
            return "ThrottlingException"
        if call == 2 and n == 5:
            return "InternalFailure"
        return None

    events = FakeEvents(fail)
    sleeps = Sleeps()
    report = producer(events, sleep=sleeps, base_seconds=0.1, cap_seconds=10.0).send(
        envelope(n) for n in range(8)
    )

    assert events.sent_indexes() == [list(range(8)), [2, 5], [5]]
    # min(cap, base * 2**attempt) + rng() * base, with rng() = 0.5
    assert sleeps.calls == pytest.approx([0.1 + 0.05, 0.2 + 0.05])
    assert report.ok
    assert [item.index for item in report.accepted] == list(range(8))
    assert report.event_ids[5] == "ev-8"  # accepted on the third request
    assert report.requests == 3


def test_the_backoff_doubles_up_to_its_cap() -> None:
    def fail(call: int, position: int, entry: PutEventsRequestEntryTypeDef) -> str | None:
        return "ThrottlingException" if call < 7 else None

    sleeps = Sleeps()
    report = producer(FakeEvents(fail), sleep=sleeps, max_attempts=7, base_seconds=1.0, cap_seconds=4.0).send(
        [envelope(0)]
    )

    assert report.ok
    assert sleeps.calls == pytest.approx([1.5, 2.5, 4.5, 4.5, 4.5, 4.5])


def test_entries_that_keep_failing_are_refused_with_eventbridges_error_code() -> None:
    def fail(call: int, position: int, entry: PutEventsRequestEntryTypeDef) -> str | None:
        n = json.loads(entry["Detail"])["payload"]["n"]
        return "ThrottlingException" if n == 1 else None

    events = FakeEvents(fail)
    sleeps = Sleeps()
    report = producer(events, sleep=sleeps, max_attempts=3).send(envelope(n) for n in range(3))

    assert events.sent_indexes() == [[0, 1, 2], [1], [1]]
    assert len(sleeps.calls) == 2
    assert report.accepted == (Accepted(0, "ev-1"), Accepted(2, "ev-2"))
    (refused,) = report.refused
    assert refused == Refused(
        1,
        "EventBridge refused it after 3 attempts: ThrottlingException: ThrottlingException for entry 0",
        error_code="ThrottlingException",
    )
    assert refused.sent
    assert not report.ok


def test_a_failing_request_raises_with_what_was_accepted_before_it() -> None:
    events = FakeEvents(raise_on_call=2)
    with pytest.raises(SendError) as raised:
        producer(events).send(envelope(n) for n in range(25))

    assert "ResourceNotFoundException" in str(raised.value)
    assert "(10 accepted before it)" in str(raised.value)
    assert [item.index for item in raised.value.report.accepted] == list(range(10))
    assert raised.value.unsent == tuple(range(10, 25))
    assert len(events.requests) == 2  # nothing after the failed request


# ----------------------------------------------------------------------------------- local validation


def test_what_validate_would_quarantine_is_refused_here_and_never_sent() -> None:
    events = FakeEvents()
    without_tenant = latency()
    del without_tenant["tenant_id"]
    report = producer(events, types=TYPES).send(
        [
            latency(),
            without_tenant,
            latency(payload={"service": "checkout-api"}),
            latency(type="NoSuchType"),
            latency(type="CommandAuthorized"),
            latency(kind="command"),
            {"tenant_id": "acme", "payload": {}},
            ["not", "an", "object"],  # type: ignore[list-item]
            latency(tenant_id="acme", id="evt-2"),
        ]
    )

    assert [item.index for item in report.accepted] == [0, 8]
    assert [json.loads(entry["Detail"]).get("id") for entry in events.requests[0]] == [None, "evt-2"]
    reasons = {item.index: (item.field, item.reason) for item in report.refused}
    assert reasons[1] == ("tenant_id", "tenant_id: Field required")
    assert reasons[2][0] == "payload.cluster"
    assert reasons[2][1].startswith("payload.cluster: Field required")
    assert reasons[3] == (
        "type",
        "unknown type 'NoSuchType': no registered workflow declares it",
    )
    assert reasons[4][0] == "type"
    assert "is a pipeline fact" in reasons[4][1]
    assert reasons[5] == ("kind", "'ServiceLatencyIncreased' is a event, not a command")
    assert reasons[6][0] == "type"
    assert reasons[7][1] == "an envelope is a JSON object, not a list"
    assert not any(item.sent for item in report.refused)


def test_without_a_registry_only_the_structure_is_checked() -> None:
    events = FakeEvents()
    report = producer(events).send(
        [
            {"type": "NotRegisteredAnywhere", "payload": {}},
            {"payload": {}},
            {"type": 7},
            {"type": "A", "event_type": "B"},
            {"type": "A", "p99": float("nan")},
        ]
    )

    assert [item.index for item in report.accepted] == [0]
    reasons = {item.index: item.reason for item in report.refused}
    assert reasons[1] == "an envelope needs a 'type' (or 'event_type') to route on"
    assert reasons[2] == "type must be a non-empty string"
    assert reasons[3] == "type and event_type disagree: send one"
    assert reasons[4].startswith("the envelope is not JSON")


def test_an_envelope_claiming_another_source_is_refused() -> None:
    events = FakeEvents()
    report = producer(events, types=TYPES).send(
        [latency(source=SOURCE), latency(source="crm.example"), latency(source="intentbus.pipeline")]
    )

    assert [item.index for item in report.accepted] == [0]
    assert [item.field for item in report.refused] == ["source", "source"]
    assert report.refused[0].reason.startswith(
        "the envelope's source 'crm.example' is not this producer's source 'monitoring.example'"
    )
    assert len(events.requests[0]) == 1


def test_structural_checks_refuse_another_source_too() -> None:
    report = producer(FakeEvents()).send([{**envelope(0), "source": "crm.example"}])
    assert report.refused[0].field == "source"


@pytest.mark.parametrize("source", ["intentbus.pipeline", "intentbus.workflow", "aws.events", ""])
def test_a_producer_cannot_speak_as_the_pipeline_or_aws(source: str) -> None:
    with pytest.raises(ValueError, match=r"reserved|needs a source"):
        Producer(cast("EventBridgeClient", FakeEvents()), BUS, source=source)


def test_an_envelope_model_is_sent_as_its_json() -> None:
    model = Envelope(
        id="evt-1",
        source=SOURCE,
        type="ServiceLatencyIncreased",
        time=datetime(2026, 5, 1, tzinfo=UTC),
        kind=Kind.EVENT,
        tenant_id="acme",
        trace_id="tr_1",
        run_id="run_1",
        step_index=0,
        correlation_id="run_1",
        payload=latency()["payload"],
    )
    events = FakeEvents()
    report = producer(events, types=TYPES).send([model])

    assert report.ok
    assert json.loads(events.requests[0][0]["Detail"]) == model.to_json_dict()
