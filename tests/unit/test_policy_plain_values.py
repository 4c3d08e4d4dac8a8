"""A policy made from plain values is the very model pydantic's validation makes; anything else is
validated by pydantic as before, so every refusal is pydantic's own."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from intentbus.policy import Effect, Limit, Policy, Rule


def _as_validated(model: type[BaseModel], data: dict[str, Any]) -> BaseModel | str:
    """What pydantic's own validation makes of ``data`` (its error's summary if it refuses)."""
    try:
        return model.__pydantic_validator__.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as error:
        return str(error.errors(include_url=False))


def _made(model: type[BaseModel], data: dict[str, Any]) -> BaseModel | str:
    try:
        return model(**data)
    except ValidationError as error:
        return str(error.errors(include_url=False))


def _same(made: BaseModel | str, validated: BaseModel | str) -> None:
    assert made == validated
    if isinstance(made, BaseModel) and isinstance(validated, BaseModel):
        assert made.model_fields_set == validated.model_fields_set
        assert made.model_dump() == validated.model_dump()
        assert made.model_dump_json() == validated.model_dump_json()
        assert list(made.__dict__) == list(validated.__dict__)
        for name, value in made.__dict__.items():
            assert type(value) is type(validated.__dict__[name]), name


_text = st.text(max_size=5) | st.sampled_from(["", "dev", "*"])
_values = (
    _text
    | st.none()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False)
    | st.booleans()
    | st.sampled_from([Effect.ALLOW, "allow", "nope", b"dev", ["dev"], ("dev",), (1,)])
    | st.tuples(_text, _text)
    | st.lists(_text, max_size=2)
    | st.dictionaries(_text, st.tuples(_text) | st.lists(_text, max_size=1) | _text, max_size=2)
    | st.dictionaries(_text, st.just(Limit(min=1, max=2)) | st.just({"min": 1}), max_size=2)
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["min", "max", "mid"]), _values, max_size=3))
def test_a_limit_is_what_validation_makes(data: dict[str, Any]) -> None:
    _same(_made(Limit, data), _as_validated(Limit, data))


_RULE_KEYS = ["id", "command", "effect", "tenants", "environments", "where", "limits", "reason", "other"]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    st.fixed_dictionaries({"id": _text, "command": _text, "effect": st.sampled_from(list(Effect))}),
    st.dictionaries(st.sampled_from(_RULE_KEYS), _values, max_size=4),
)
def test_a_rule_is_what_validation_makes(required: dict[str, Any], data: dict[str, Any]) -> None:
    for given_data in ({**required, **data}, data):
        _same(_made(Rule, given_data), _as_validated(Rule, given_data))


@given(st.lists(st.sampled_from(["rule", "dict", "text"]), max_size=3), st.sampled_from([tuple, list]))
def test_a_policy_is_what_validation_makes(kinds: list[str], container: type) -> None:
    made = {
        "rule": Rule(id="r", command="c", effect=Effect.DENY),
        "dict": {"id": "d", "command": "c", "effect": "allow"},
    }
    rules = container(made.get(kind, kind) for kind in kinds)
    for data in ({"rules": rules}, {}, {"rules": rules, "other": 1}):
        _same(_made(Policy, data), _as_validated(Policy, data))


def test_the_workflows_policies_read_plainly_and_evaluate_as_before() -> None:
    from intentbus.workflows import direct_tool, incident

    for policy in (incident.POLICY, direct_tool.workflow.policy):
        _same(policy, _as_validated(Policy, {"rules": [rule.model_dump() for rule in policy.rules]}))
    verdict = incident.POLICY.evaluate(
        command="scale_service", payload={"desired_count": 999}, tenant_id="acme", environment="dev"
    )
    assert verdict.effect is Effect.DENY
    assert "above the maximum" in verdict.reason


def test_the_hand_check_knows_every_field() -> None:
    """A field or validator added to a policy model must be added to its hand check too."""
    assert list(Limit.model_fields) == ["min", "max"]
    assert list(Rule.model_fields) == [
        "id",
        "command",
        "effect",
        "tenants",
        "environments",
        "where",
        "limits",
        "reason",
    ]
    assert list(Policy.model_fields) == ["rules"]
    for model in (Limit, Rule, Policy):
        decorators = model.__pydantic_decorators__
        kinds = ["validators", "field_validators", "model_validators", "root_validators"]
        kinds += ["field_serializers", "model_serializers"]
        assert [kind for kind in kinds if getattr(decorators, kind)] == [], model


@pytest.mark.parametrize("bad", [{"id": "x"}, {"id": "x", "command": "c", "effect": "maybe"}])
def test_a_rule_refused_is_refused_by_pydantic(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Rule(**bad)
