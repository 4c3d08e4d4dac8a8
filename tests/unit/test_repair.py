"""Repairing quarantined input events: validated as validate will, one more try with the error fed
back, resubmitted through validate with the quarantined original's id as its lineage."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from intentbus.adapters.bedrock_agent import BedrockInputRepairer
from intentbus.adapters.sqs_quarantine import SqsQuarantine
from intentbus.catalog import Catalog
from intentbus.definition import MalformedDecision
from intentbus.ids import derive_id
from intentbus.journal import Outcome
from intentbus.repair import (
    EventBridgeSubmit,
    Quarantined,
    RepairFailed,
    RepairRequest,
    ScriptedRepairer,
    repair_quarantined,
)
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline, VirtualClock
from tests.fakes import raw_body
from tests.unit import sample_workflow
from tests.unit.test_bedrock_agent import converse_for, converse_response, stubbed_client

TENANT = "acme"
CATALOG = Catalog([sample_workflow.workflow])


class Submitted(list[dict[str, str]]):
    def __call__(self, entry: Mapping[str, str]) -> None:
        self.append(dict(entry))


def bad_order(amount: Any = "three", **extra: Any) -> str:
    detail = {
        "id": "evt-o-1",
        "tenant_id": TENANT,
        "type": "OrderPlaced",
        "payload": {"order_id": "o-1", "amount": amount},
        **extra,
    }
    return raw_body(detail, detail_type="OrderPlaced", source="shop.example")


def quarantined(pipeline: InMemoryPipeline, body: str) -> dict[str, Any]:
    assert pipeline.deliver("validate", body).outcome is Outcome.QUARANTINED
    return pipeline.quarantine.records[-1]


def fix_amount(request: RepairRequest) -> Mapping[str, Any]:
    detail = json.loads(request.body)["detail"]
    return {**detail, "payload": {**detail["payload"], "amount": 3}}


def resubmit(pipeline: InMemoryPipeline, entry: Mapping[str, str]) -> None:
    pipeline.run(
        raw_body(json.loads(entry["Detail"]), detail_type=entry["DetailType"], source=entry["Source"])
    )


def test_a_repaired_event_goes_back_through_validate_with_its_lineage() -> None:
    sample_workflow.RUNS.clear()
    pipeline = InMemoryPipeline(CATALOG)
    record = quarantined(pipeline, bad_order())
    assert record["reason"].startswith("payload.amount: Input should be a valid integer")
    submitted = Submitted()

    resubmitted = repair_quarantined(
        record, ScriptedRepairer(fix_amount), types=CATALOG.types, submit=submitted
    )

    assert resubmitted.original_id == "evt-o-1"
    assert resubmitted.attempts == 1
    envelope = resubmitted.envelope
    assert (envelope.causation_id, envelope.id) == ("evt-o-1", derive_id("evt-o-1", "repair"))
    assert (envelope.tenant_id, envelope.type, envelope.payload) == (
        TENANT,
        "OrderPlaced",
        {"order_id": "o-1", "amount": 3},
    )
    assert submitted == [resubmitted.entry]
    assert (resubmitted.entry["Source"], resubmitted.entry["DetailType"]) == ("shop.example", "OrderPlaced")

    resubmit(pipeline, resubmitted.entry)
    (first,) = [
        e
        for e in pipeline.store.entries(TENANT, envelope.run_id)
        if e.stage == "validate" and e.summary["event_id"] == envelope.id
    ]
    accepted = first.outputs[0].payload["event"]
    assert (accepted["id"], accepted["causation_id"]) == (envelope.id, "evt-o-1")  # the lineage, in the log
    assert pipeline.store.states[(TENANT, envelope.run_id)].status is Status.COMPLETED

    # Repairing and resubmitting the same record again is deduplicated like any redelivery.
    again = repair_quarantined(record, ScriptedRepairer(fix_amount), types=CATALOG.types, submit=submitted)
    assert again.envelope == envelope
    assert (
        pipeline.deliver(
            "validate",
            raw_body(json.loads(again.entry["Detail"]), detail_type="OrderPlaced", source="shop.example"),
        ).outcome
        is Outcome.DUPLICATE
    )


def test_a_repair_still_invalid_gets_one_more_attempt_with_the_validation_error() -> None:
    pipeline = InMemoryPipeline(CATALOG)
    record = quarantined(pipeline, bad_order())
    requests: list[RepairRequest] = []

    def twice(request: RepairRequest) -> Mapping[str, Any]:
        requests.append(request)
        detail = json.loads(request.body)["detail"]
        if request.attempt == 1:  # fixes the amount, and adds a field the payload does not have
            return {**detail, "payload": {"order_id": "o-1", "amount": 3, "note": "x"}}
        return {**detail, "payload": {"order_id": "o-1", "amount": 3}}

    resubmitted = repair_quarantined(record, ScriptedRepairer(twice), types=CATALOG.types, submit=Submitted())

    assert resubmitted.attempts == 2
    first, second = requests
    assert first.reason == record["reason"]
    assert first.payload_model is sample_workflow.OrderPlaced
    assert second.attempt == 2
    # The unknown key is not named (it is the repairer's own text); the repairer sees its answer again.
    assert second.reason.startswith("payload.<key>: Extra inputs are not permitted")
    assert json.loads(second.body)["detail"]["payload"]["note"] == "x"  # it is shown its own repair


def test_two_invalid_repairs_leave_the_event_in_quarantine() -> None:
    pipeline = InMemoryPipeline(CATALOG)
    record = quarantined(pipeline, bad_order())
    submitted = Submitted()

    def unhelpful(request: RepairRequest) -> Mapping[str, Any]:
        if request.attempt == 1:
            raise MalformedDecision("no tool call", raw={"text": "I cannot fix this"})
        return {**json.loads(request.body)["detail"], "payload": {"order_id": "o-1"}}

    with pytest.raises(RepairFailed) as caught:
        repair_quarantined(record, ScriptedRepairer(unhelpful), types=CATALOG.types, submit=submitted)
    answers = caught.value.raw_output
    assert str(caught.value) == (
        f"still invalid after 2 repair attempts (the last: payload.amount); the answers: {answers.summary()}"
    )
    assert [a["reason"] for a in caught.value.attempts] == ["no tool call", "payload.amount: Field required"]
    first, second = json.loads(answers.text)
    assert (first, second["payload"]) == ({"text": "I cannot fix this"}, {"order_id": "o-1"})
    assert submitted == []


def test_a_repair_cannot_move_the_event_to_another_tenant() -> None:
    pipeline = InMemoryPipeline(CATALOG)
    record = quarantined(pipeline, bad_order())

    def hijack(request: RepairRequest) -> Mapping[str, Any]:
        return {**fix_amount(request), "tenant_id": "victim"}

    with pytest.raises(RepairFailed) as caught:
        repair_quarantined(record, ScriptedRepairer(hijack), types=CATALOG.types, submit=Submitted())
    assert caught.value.attempts[-1]["reason"] == "the repair changed tenant_id from 'acme': it may not"


def test_a_body_that_was_not_json_can_be_repaired_whole() -> None:
    pipeline = InMemoryPipeline(CATALOG)
    record = quarantined(pipeline, "{not json")

    def rewrite(request: RepairRequest) -> Mapping[str, Any]:
        assert request.type_name is None
        assert request.payload_model is None
        return {
            "type": "OrderPlaced",
            "source": "shop.example",
            "tenant_id": TENANT,
            "payload": {"order_id": "o-2", "amount": 1},
        }

    resubmitted = repair_quarantined(
        record, ScriptedRepairer(rewrite), types=CATALOG.types, submit=Submitted()
    )
    assert resubmitted.original_id == Quarantined.from_record(record).original_id
    assert resubmitted.envelope.causation_id == resubmitted.original_id
    assert resubmitted.entry["DetailType"] == "OrderPlaced"


def test_only_input_events_quarantined_by_validate_are_repaired() -> None:
    record = {"stage": "decide", "reason": "agent ...", "field": None, "body": "{}"}
    with pytest.raises(ValueError, match="quarantined by decide"):
        repair_quarantined(record, ScriptedRepairer(fix_amount), types=CATALOG.types, submit=Submitted())


def test_the_quarantine_queues_message_body_is_read_as_it_is_written() -> None:
    sent: list[str] = []

    class Sqs:
        def send_message(self, **kwargs: Any) -> None:
            sent.append(kwargs["MessageBody"])

    body = bad_order()
    SqsQuarantine("q", Sqs(), VirtualClock()).put(  # type: ignore[arg-type]
        stage="validate", reason="payload.amount: bad", field="payload.amount", body=body, message_id="m-1"
    )
    record = Quarantined.from_message(sent[0])
    assert (record.stage, record.field, record.body, record.source_message_id) == (
        "validate",
        "payload.amount",
        body,
        "m-1",
    )
    resubmitted = repair_quarantined(
        sent[0], ScriptedRepairer(fix_amount), types=CATALOG.types, submit=Submitted()
    )
    assert resubmitted.envelope.payload["amount"] == 3


def test_resubmitting_to_eventbridge() -> None:
    session = boto3.session.Session(aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1")
    events = session.client("events")
    entry = {"Source": "shop.example", "DetailType": "OrderPlaced", "Detail": '{"id": "x"}'}
    with Stubber(events) as stubber:
        stubber.add_response(
            "put_events",
            {"FailedEntryCount": 0, "Entries": [{"EventId": "e-1"}]},
            {"Entries": [{**entry, "EventBusName": "intentbus-dev"}]},
        )
        EventBridgeSubmit(events, "intentbus-dev")(entry)


def test_bedrock_repairs_an_input_event_through_the_same_path() -> None:
    pipeline = InMemoryPipeline(CATALOG)
    record = quarantined(pipeline, bad_order())
    client = stubbed_client()
    original = json.loads(record["body"])["detail"]
    fixed = {**original, "payload": {"order_id": "o-1", "amount": 3}}
    requests: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.bedrock-runtime.Converse", lambda params, **_: requests.append(params)
    )
    with Stubber(client) as stubber:
        stubber.add_response(
            "converse",
            converse_response(
                [
                    {"text": "amount must be an integer; 'three' is 3."},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_r1",
                            "name": "resubmit_event",
                            "input": {"detail": fixed},
                        }
                    },
                ]
            ),
        )
        resubmitted = repair_quarantined(
            record, BedrockInputRepairer(converse_for(client)), types=CATALOG.types, submit=Submitted()
        )
    assert resubmitted.envelope.payload == {"order_id": "o-1", "amount": 3}
    (request,) = requests
    assert "payload.amount: Input should be a valid integer" in request["messages"][0]["content"][0]["text"]
    schema = request["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]
    assert schema["properties"]["detail"]["properties"]["payload"]["properties"]["amount"] == {
        "type": "integer"
    }
