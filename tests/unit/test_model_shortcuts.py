"""The pipeline's own models dumped and validated by their serializer and validator directly
(``json_text_of``, ``validated``, ``validated_json``): the same text, the same models and the same errors as
``model_dump_json``, ``model_validate`` and ``model_validate_json``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from intentbus import facts
from intentbus.bus_event import EventBridgeModel
from intentbus.envelope import Envelope, Kind
from intentbus.journal import Authorization, LogEntry, Outcome
from intentbus.model_shortcuts import json_text_of, validated, validated_json
from intentbus.run_status import RECORDED_CHECKS
from intentbus.state import Status, WorkflowState
from intentbus.testing.bodies import producer_body

AT = datetime(2026, 12, 6, 0, 20, 1, 123456, tzinfo=UTC)


def _envelope(payload: dict[str, Any], **more: Any) -> Envelope:
    return Envelope(
        id="out-1",
        source="intentbus.pipeline",
        type="EventAccepted",
        time=AT,
        kind=Kind.EVENT,
        tenant_id="acme",
        trace_id="tr_1",
        run_id="run_1",
        step_index=1,
        correlation_id="run_1",
        payload=payload,
        **more,
    )


PAYLOADS: list[dict[str, Any]] = [
    {},
    {"service": "checkout-api", "p99_ms": 1240.0, "threshold_ms": 500, "ok": False, "note": None},
    {"text": 'é ü 中文 \u2028 "quoted" \\ back', "nested": {"x": [1, 2.5, -0.0]}, "big": 10**30},
]


def _models() -> list[BaseModel]:
    envelopes = [
        _envelope(payload, traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        for payload in PAYLOADS
    ]
    entry = LogEntry(
        stage="record",
        input_id="in-1",
        input_type="CommandExecuted",
        outcome=Outcome.APPLIED,
        at=AT,
        version=3,
        summary={"reason": "ok", "outputs": []},
        outputs=tuple(envelopes),
    )
    state = WorkflowState(
        tenant_id="acme",
        run_id="run_1",
        workflow="incident",
        definition_version="v1",
        status=Status.RUNNING,
        version=2,
        step_index=1,
        step_on="Started",
        pending=("c-1",),
        results={"c-0": {"ok": True, "n": 1.5}},
        started_at=AT,
        updated_at=AT,
        checks=RECORDED_CHECKS,
    )
    granted = Authorization(
        command_id="c-1", fact_id="f-1", digest="d", command_digest="e", by="authorize", at=AT
    )
    return [*envelopes, entry, state, granted, facts.EventAccepted(event=envelopes[1])]


@pytest.mark.parametrize("model", _models(), ids=lambda model: type(model).__name__)
def test_the_text_is_the_models_dump(model: BaseModel) -> None:
    assert json_text_of(model) == model.model_dump_json()
    left_out = {next(iter(type(model).model_fields))}
    assert json_text_of(model, exclude=left_out) == model.model_dump_json(exclude=left_out)


@pytest.mark.parametrize("model", _models(), ids=lambda model: type(model).__name__)
def test_the_model_read_back_is_the_one_validated_by_its_methods(model: BaseModel) -> None:
    kind = type(model)
    text = model.model_dump_json()
    from_json = validated_json(kind, text)
    assert type(from_json) is kind
    assert from_json == kind.model_validate_json(text)
    assert from_json.model_fields_set == kind.model_validate_json(text).model_fields_set
    values = model.model_dump()
    from_values = validated(kind, values)
    assert from_values == kind.model_validate(values)
    assert from_values.model_fields_set == kind.model_validate(values).model_fields_set


def test_a_lone_surrogate_fails_to_dump_as_the_method_does() -> None:
    envelope = _envelope({"text": "\ud800"})
    with pytest.raises(PydanticSerializationError) as method:
        envelope.model_dump_json()
    with pytest.raises(PydanticSerializationError) as direct:
        json_text_of(envelope)
    assert str(direct.value) == str(method.value)


BAD: list[Any] = [
    {"id": "", "type": "bad type", "time": "yesterday", "kind": "rumour"},
    {
        "id": "x",
        "source": "s",
        "type": "T",
        "time": AT,
        "kind": "event",
        "tenant_id": "a",
        "trace_id": "t",
        "run_id": "r",
        "step_index": -1,
        "correlation_id": "c",
        "payload": {},
        "surprise": 1,
    },
    "not an object",
]


@pytest.mark.parametrize("value", BAD)
def test_a_value_refused_is_refused_with_the_same_errors(value: Any) -> None:
    with pytest.raises(ValidationError) as method:
        Envelope.model_validate(value)
    with pytest.raises(ValidationError) as direct:
        validated(Envelope, value)
    assert direct.value.errors() == method.value.errors()
    assert direct.value.title == method.value.title


def test_a_text_refused_is_refused_with_the_same_errors() -> None:
    for text in ("{", '{"stage": 1}', "[]"):
        with pytest.raises(ValidationError) as method:
            LogEntry.model_validate_json(text)
        with pytest.raises(ValidationError) as direct:
            validated_json(LogEntry, text)
        assert direct.value.errors() == method.value.errors()


def test_a_bus_event_validates_as_before() -> None:
    import json

    raw = json.loads(producer_body({"id": "e-1", "payload": {"a": 1}}, detail_type="T", source="crm.example"))
    assert validated(EventBridgeModel, raw) == EventBridgeModel.model_validate(raw)
