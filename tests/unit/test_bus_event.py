"""``intentbus.bus_event.EventBridgeModel`` is Powertools' ``EventBridgeModel`` without its parser package:
the same fields (types, aliases, defaults), configuration and ``detail`` validator, and the same outcome,
value or errors, for any body. If a Powertools upgrade changes its model, this fails."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel as PowertoolsModel
from pydantic import BaseModel, ValidationError

from intentbus.bus_event import EventBridgeModel


def _field(model: type[BaseModel], name: str) -> tuple[Any, ...]:
    info = model.model_fields[name]
    return (
        info.annotation,
        info.alias,
        info.validation_alias,
        info.is_required(),
        info.default,
        info.metadata,
    )


def test_the_fields_and_configuration_are_powertools_own() -> None:
    assert list(EventBridgeModel.model_fields) == list(PowertoolsModel.model_fields)
    for name in PowertoolsModel.model_fields:
        assert _field(EventBridgeModel, name) == _field(PowertoolsModel, name), name
    assert EventBridgeModel.model_config == PowertoolsModel.model_config

    ours = EventBridgeModel.__pydantic_decorators__.field_validators
    theirs = PowertoolsModel.__pydantic_decorators__.field_validators
    assert {name: (d.info.fields, d.info.mode) for name, d in ours.items()} == {
        name: (d.info.fields, d.info.mode) for name, d in theirs.items()
    }


_EVENT: dict[str, Any] = {
    "version": "0",
    "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    "source": "monitoring.example",
    "account": "123456789012",
    "time": "2026-12-06T05:30:00Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/r"],
    "detail-type": "ServiceLatencyIncreased",
    "detail": {"tenant_id": "acme", "payload": {"p99_ms": 900}},
}


@pytest.mark.parametrize(
    "body",
    [
        _EVENT,
        {**_EVENT, "replay-name": "archive-replay"},
        {**_EVENT, "source": "aws.scheduler", "detail": "{}"},
        {**_EVENT, "detail": "{}"},
        {**_EVENT, "detail": None},
        {key: value for key, value in _EVENT.items() if key != "account"},
        {key: value for key, value in _EVENT.items() if key != "detail-type"} | {"detail_type": "ByName"},
        {**_EVENT, "time": "yesterday"},
        {**_EVENT, "time": 1765000000},
        {**_EVENT, "resources": "arn:aws:events:us-east-1:123456789012:rule/r"},
        {**_EVENT, "version": 0},
        {**_EVENT, "extra": "kept out"},
        {},
    ],
)
def test_a_body_validates_as_powertools_model_validates_it(body: dict[str, Any]) -> None:
    def outcome(model: type[BaseModel]) -> Any:
        try:
            return model.model_validate(body).model_dump(by_alias=True)
        except ValidationError as error:
            return [(item["type"], item["loc"], item["msg"]) for item in error.errors()]

    assert outcome(EventBridgeModel) == outcome(PowertoolsModel)
