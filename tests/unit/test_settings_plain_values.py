"""The settings' hand check: an environment it reads gives ``model_validate``'s very instance; anything else,
valid or not, is left to ``model_validate``, so every refusal is pydantic's own."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from intentbus.config import Settings, plainly_valid

TEMPLATE = {
    "WORKFLOW_TABLE": "intentbus-WorkflowTable-V2B48SRDRRO8",
    "EVENT_BUS_NAME": "intentbus-bus",
    "QUARANTINE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/intentbus-QuarantineQueue",
    "INTENTBUS_ENVIRONMENT": "dev",
    "INTENTBUS_WORKFLOWS": "intentbus.workflows.incident,intentbus.workflows.direct_tool",
    "INTENTBUS_PRODUCERS": "monitoring.example=*;crm.example=*",
    "INTENTBUS_ID_SALT": "arn:aws:cloudformation:us-east-1:123456789012:stack/intentbus/0acf4f96",
    "INTENTBUS_MAX_RECEIVE_COUNT": "5",
    "INTENTBUS_CLAIM_BUCKET": "intentbus-claimcheckbucket",
    "INTENTBUS_CLAIM_CHECK_BYTES": "65536",
    "TRACING_BACKEND": "xray",
    "IDEMPOTENCY_TABLE": "intentbus-IdempotencyTable",
    "IDEMPOTENCY_REDIS_ENDPOINT": "",
    "IDEMPOTENCY_REDIS_PORT": "6379",
    "IDEMPOTENCY_REDIS_TLS": "true",
    "IDEMPOTENCY_REDIS_SECRET_ARN": "",
    "BEDROCK_MODEL_ID": "",
    "BEDROCK_REGION": "",
    "BEDROCK_MAX_TOKENS": "1024",
    "BEDROCK_TEMPERATURE": "0.0",
    "POWERTOOLS_SERVICE_NAME": "intentbus-execute",
}
"""What the template sets (a stage's own variables and the decide stage's Bedrock parameters together)."""

_NAMES = [name.upper() for name in Settings.model_fields]
_NAMES += ["PATH", "Workflow_Table", "BEDROCK_", "IDEMPOTENCY"]
_TEXTS = [
    *("", " ", "0", "00", "1", "007", "+5", "-1", "1_000", " 5", "5 ", "5.0", "1.", ".5", "1e3", "1E-1"),
    *("inf", "nan", "0.5", "1.0", "2", "1023", "1024", "204800", "204801", "65535", "65536", "100000"),
    *("100001", "200000", "200001", "99999999999999999999", "0.0000000000000001", "true", "True", "TRUE"),
    *("false", "False", "yes", "no", "on", "off", "t", "f", "y", "n", "maybe", " true", "auto", "any"),
    *("Auto", "auto ", "xray", "otel", "off", "XRAY", "zipkin", "x" * 2048, "x" * 2049),
    *("\u0663", "\u00b2", "\uff11\uff12", "a\udcff", "\u0130", "\u212a"),
]
"""With unicode digits (Arabic-Indic three, superscript two, fullwidth twelve), a lone surrogate (as
``os.environ`` holds undecodable bytes), a dotted capital I and the Kelvin sign (lower-cased to ASCII)."""
_VALUES = st.one_of(st.sampled_from(_TEXTS), st.text(max_size=6), st.text("0123456789+-_.eE ", max_size=6))
_BASES = [TEMPLATE, {name: TEMPLATE[name] for name in list(TEMPLATE)[:5]}, {}]


@st.composite
def _environments(draw: st.DrawFn) -> dict[str, str]:
    """A template-like environment with some variables changed, added or removed."""
    environment = dict(draw(st.sampled_from(_BASES)))
    changes = draw(st.dictionaries(st.sampled_from(_NAMES), st.none() | _VALUES, max_size=6))
    for name, value in changes.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    return environment


def _values(environment: dict[str, str]) -> dict[str, Any]:
    fields = Settings.model_fields
    return {name.lower(): value for name, value in environment.items() if name.lower() in fields}


def test_the_template_environment_is_read_by_hand() -> None:
    values = _values(TEMPLATE)
    plain = plainly_valid(Settings, values)

    assert plain is not None
    _assert_same(plain, Settings.model_validate(values))


@given(_environments())
@example({**TEMPLATE, "IDEMPOTENCY_REDIS_PORT": "\u0663"})
@example({**TEMPLATE, "BEDROCK_TEMPERATURE": "1.0000000000000001"})
@example({**TEMPLATE, "IDEMPOTENCY_REDIS_TLS": "TRUE", "BEDROCK_TOOL_CHOICE": "any"})
def test_the_hand_check_gives_model_validates_instance_or_leaves_it_the_values(
    environment: dict[str, str],
) -> None:
    _check_one(environment)


def test_every_listed_text_of_every_variable_is_read_as_pydantic_reads_it() -> None:
    for name in _NAMES:
        for text in _TEXTS:
            _check_one({**TEMPLATE, name: text})


def _check_one(environment: dict[str, str]) -> None:
    values = _values(environment)
    plain = plainly_valid(Settings, dict(values))
    try:
        validated = Settings.model_validate(values)
    except ValidationError:
        assert plain is None, f"the hand check accepted what pydantic refuses: {environment}"
        return
    if plain is not None:
        _assert_same(plain, validated)


def _assert_same(plain: Settings, validated: Settings) -> None:
    assert plain == validated
    assert plain.model_dump() == validated.model_dump()
    assert {name: type(value) for name, value in plain} == {name: type(value) for name, value in validated}
    assert plain.model_fields_set == validated.model_fields_set
    assert list(plain.__dict__) == list(validated.__dict__)
