"""Decide checks a proposed payload with its command model's validator and dumps it with its serializer,
called directly: the same payloads and the same refusals as ``model_validate(...).model_dump(mode="json")``,
and a model that overrides either method is still called through it."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any, Self

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intentbus.definition import Decision, ProposedCommand, RepeatSafety, Tool, Workflow
from intentbus.errors import MalformedInput
from intentbus.model_shortcuts import json_values, plain_model
from intentbus.policy import Policy
from intentbus.stages import decide


class _Size(StrEnum):
    SMALL = "small"
    LARGE = "large"


class _Scale(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    service: str = Field(min_length=1, max_length=20)
    replicas: int = Field(ge=0, le=50)
    size: _Size = _Size.SMALL
    ratio: float = 1.0
    budget: Decimal | None = None
    at: datetime | None = None
    labels: dict[str, str] = Field(default_factory=dict)


class _Lowered(_Scale):
    """Overrides both methods: decide must go through them."""

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        return super().model_validate({**obj, "service": str(obj.get("service", "")).lower()}, **kwargs)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().model_dump(**kwargs), "dumped_by": "override"}


def _workflow() -> Workflow:
    workflow = Workflow(name="canonical", version="1", policy=Policy())
    tool = Tool(name="noop", run=lambda arguments, context: {}, repeat_safety=RepeatSafety.SAFE)
    workflow.command("scale", _Scale, tool=tool)
    workflow.command("lowered", _Lowered, tool=tool)
    return workflow


WORKFLOW = _workflow()

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=24)
_payloads = st.fixed_dictionaries(
    {},
    optional={
        "service": _text | st.integers() | st.none(),
        "replicas": st.integers(-3, 60) | st.floats(allow_nan=True) | _text | st.booleans(),
        "size": st.sampled_from(["small", "large", "medium", _Size.LARGE, 1]),
        "ratio": st.floats(allow_nan=True, allow_infinity=True) | st.integers() | _text,
        "budget": st.decimals(allow_nan=False, allow_infinity=False, places=2) | _text | st.none(),
        "at": st.datetimes(timezones=st.just(UTC)) | _text | st.integers(0, 2**40),
        "labels": st.dictionaries(_text, _text | st.integers(), max_size=3),
        "extra": st.integers(),
    },
)


def _before(proposed: ProposedCommand) -> tuple[str, Any]:
    """``_canonical`` as it was: the model's own two methods."""
    model = WORKFLOW.commands[proposed.type].model
    try:
        return "made", model.model_validate(proposed.payload).model_dump(mode="json")
    except ValidationError as error:
        return "refused", MalformedInput.from_validation(error, model, prefix=f"decision.{proposed.type}.")


def _now(proposed: ProposedCommand) -> tuple[str, Any]:
    try:
        return "made", decide._canonical(WORKFLOW, proposed)
    except MalformedInput as error:
        return "refused", error


def _comparable(outcome: tuple[str, Any]) -> tuple[str, Any]:
    kind, value = outcome
    if kind == "refused":
        return kind, (value.reason, value.field)
    return kind, (value, [type(item) for item in value.values()])


@settings(max_examples=300)
@given(payload=_payloads, command=st.sampled_from(["scale", "lowered"]))
def test_the_same_payload_or_the_same_refusal_as_the_models_methods(
    payload: dict[str, Any], command: str
) -> None:
    proposed = ProposedCommand(type=command, payload=payload)
    assert _comparable(_now(proposed)) == _comparable(_before(proposed))


def test_a_model_that_overrides_the_methods_is_called_through_them() -> None:
    made = decide._canonical(
        WORKFLOW, ProposedCommand(type="lowered", payload={"service": "API", "replicas": 2})
    )
    assert made["service"] == "api"
    assert made["dumped_by"] == "override"
    assert plain_model(_Lowered) is False
    assert plain_model(_Scale) is True


def test_a_plain_decision_is_dumped_as_its_model_dump() -> None:
    decision = Decision(
        agent="a",
        commands=(ProposedCommand(type="scale", payload={"service": "x", "replicas": 1}),),
        rationale="r",
        evidence={"k": [1, 2.5, None]},
        confidence=0.5,
    )
    assert json_values(decision) == decision.model_dump(mode="json")


def test_an_undeclared_command_is_refused_before_any_model() -> None:
    with pytest.raises(MalformedInput, match="does not declare"):
        decide._canonical(WORKFLOW, ProposedCommand(type="unknown", payload={}))
