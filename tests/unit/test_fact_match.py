"""``same_fact`` compares values before texts: it accepts and refuses exactly the pairs that comparing
their JSON texts (less the trace context) and then their digests did, and a fact read back as it was
published is told by its values alone."""

from __future__ import annotations

import json
import marshal
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import ValidationError

from intentbus.envelope import Envelope, Kind
from intentbus.stages.common import (
    _MAYBE_SURROGATE,
    _NO_REFERENCES,
    _PLAIN_VALUES,
    _content_json,
    _same_values,
    fact_digest,
    same_fact,
)

LONE, OTHER_LONE = chr(0xD800), chr(0xDC00)
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

# Any code point, lone surrogates too: a JSON text may escape one (\ud800), and json.loads keeps it.
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None), max_size=8)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, True, False, 1e16, 2**53 + 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    ANY_TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)
PAYLOADS = st.dictionaries(ANY_TEXT, JSON_VALUES, max_size=5)


def by_text_then_digest(one: Envelope, other: Envelope) -> bool:
    """How ``same_fact`` decided before it compared values: texts less the trace context, then digests."""
    text = _content_json(one)
    if text is not None and text == _content_json(other):
        return True
    return fact_digest(one) == fact_digest(other)


def fact(payload: dict[str, Any], **fields: Any) -> Envelope:
    base: dict[str, Any] = {
        "id": "fact-1",
        "source": "intentbus.pipeline",
        "type": "EventAccepted",
        "time": datetime(2026, 1, 1, 12, 30, 1, 5, tzinfo=UTC),
        "kind": Kind.EVENT,
        "tenant_id": "acme",
        "trace_id": "tr-1",
        "run_id": "run-1",
        "step_index": 0,
        "correlation_id": "run-1",
        "payload": payload,
    }
    return Envelope(**(base | fields))


def reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    return value


def read_back(envelope: Envelope) -> Envelope:
    """As a stage reads a recorded output from its log entry's JSON."""
    return Envelope.model_validate_json(envelope.model_dump_json())


def as_sent(envelope: Envelope) -> Envelope:
    """As a stage reads a fact from its message's body."""
    return Envelope.model_validate(json.loads(envelope.model_dump_json()))


def recordable(envelope: Envelope) -> bool:
    """Whether its text can be stored (no lone surrogate): what no log entry can hold, no stage reads."""
    return _content_json(envelope) is not None


def changed_leaf(value: Any, replacement: Any) -> tuple[Any, bool]:
    """``value`` with its first scalar replaced (depth first), and whether there was one."""
    if isinstance(value, dict):
        for key, item in value.items():
            new, done = changed_leaf(item, replacement)
            if done:
                return {**value, key: new}, True
        return value, False
    if isinstance(value, list):
        for index, item in enumerate(value):
            new, done = changed_leaf(item, replacement)
            if done:
                return [*value[:index], new, *value[index + 1 :]], True
        return value, False
    return replacement, True


def decided(check: Callable[[Envelope, Envelope], bool], one: Envelope, other: Envelope) -> bool | str:
    """The answer, or the error raised instead (a lone surrogate's text has no digest)."""
    try:
        return check(one, other)
    except UnicodeEncodeError as error:
        return type(error).__name__


def assert_as_before(one: Envelope, other: Envelope) -> bool | str:
    expected = decided(by_text_then_digest, one, other)
    assert decided(same_fact, one, other) == expected
    assert decided(same_fact, other, one) == expected
    return expected


@given(PAYLOADS)
def test_the_same_content_is_the_same_fact_as_before(payload: dict[str, Any]) -> None:
    assert assert_as_before(fact(payload), fact(json.loads(json.dumps(payload)))) is not False


@given(PAYLOADS)
def test_a_fact_read_back_is_told_by_its_values(payload: dict[str, Any]) -> None:
    published = fact(payload)
    assume(recordable(published))
    assert assert_as_before(read_back(published), as_sent(published)) is True
    assert _same_values(read_back(published), as_sent(published)) or looks_like_a_surrogate(published)


def looks_like_a_surrogate(envelope: Envelope) -> bool:
    """Whether its values' marshal bytes hold what ``_same_values`` takes for a surrogate: a number's or a
    length's bytes can (~0.1% of floats), and such a fact is left to its texts, by design."""
    written = marshal.dumps(_PLAIN_VALUES(envelope.__dict__), _NO_REFERENCES)
    return _MAYBE_SURROGATE.search(written) is not None


def test_a_number_whose_bytes_look_like_a_surrogate_is_left_to_the_texts() -> None:
    published = fact({"": 1062066969.0})  # its binary float holds the bytes 0xed 0xa0-0xbf
    assert looks_like_a_surrogate(published)
    assert not _same_values(read_back(published), as_sent(published))
    assert assert_as_before(read_back(published), as_sent(published)) is True


@given(PAYLOADS)
def test_keys_in_another_order_are_the_same_fact_as_before(payload: dict[str, Any]) -> None:
    assert assert_as_before(fact(payload), fact(reordered(payload))) is not False


@given(PAYLOADS, SCALARS)
def test_a_changed_value_is_refused_as_before(payload: dict[str, Any], replacement: Any) -> None:
    changed, _ = changed_leaf(payload, replacement)
    assert_as_before(fact(payload), fact(changed))
    if recordable(fact(payload)):
        assert_as_before(read_back(fact(payload)), fact(changed))


FIELDS = st.sampled_from(["id", "source", "subject", "run_id", "causation_id", "dataschema"])
FIELD_TEXTS = st.text(st.characters(codec="utf-8"), max_size=8)
"""What an envelope's string field can hold: it refuses a lone surrogate, so no fact carries one there."""


@pytest.mark.parametrize("name", ["id", "source", "subject", "run_id", "causation_id", "dataschema"])
def test_a_lone_surrogate_in_a_string_field_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="unicode"):
        fact({}, **{name: "\ud800"})


@given(PAYLOADS, FIELDS, FIELD_TEXTS)
def test_another_field_is_refused_as_before(payload: dict[str, Any], name: str, value: str) -> None:
    assert_as_before(fact(payload), fact(payload, **{name: value or "x"}))


@given(PAYLOADS, st.sampled_from([None, TRACEPARENT]), st.sampled_from([None, "", "vendor=1"]))
def test_the_trace_context_is_left_out_as_before(
    payload: dict[str, Any], traceparent: str | None, tracestate: str | None
) -> None:
    with_trace = fact(payload, traceparent=traceparent, tracestate=tracestate)
    assert assert_as_before(fact(payload), with_trace) is not False


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        ({"n": 1}, {"n": 1.0}),
        ({"n": 1}, {"n": True}),
        ({"n": 0}, {"n": False}),
        ({"n": 0.0}, {"n": -0.0}),
        ({"n": [1]}, {"n": [1.0]}),
        ({"n": {"a": 1, "b": 2}}, {"n": {"b": 2, "a": 1}}),
        ({"s": LONE}, {"s": LONE}),
        ({"s": LONE}, {"s": OTHER_LONE}),
        ({"s": LONE, "t": 1}, {"t": 1, "s": LONE}),
        ({"n": (1, 2)}, {"n": [1, 2]}),
    ],
)
def test_values_python_calls_equal_are_told_apart_as_before(
    mine: dict[str, Any], theirs: dict[str, Any]
) -> None:
    assert_as_before(fact(mine), fact(theirs))


@pytest.mark.parametrize(
    "fields",
    [
        {"step_index": 1},
        {"depth": 1},
        {"version": 1},
        {"kind": Kind.COMMAND},
        {"time": datetime(2026, 1, 1, 12, 30, 1, 6, tzinfo=UTC)},
        {"extensions": {"x": 1}},
        {"idempotency_key": "key-1"},
    ],
)
def test_any_other_field_changed_is_refused(fields: dict[str, Any]) -> None:
    assert assert_as_before(fact({"a": 1}), fact({"a": 1}, **fields)) is False


def test_the_same_instant_at_another_offset_is_told_by_its_text() -> None:
    """Validation keeps every time in UTC; one made without it is compared as it dumps."""
    instant = datetime(2026, 1, 1, 12, tzinfo=UTC)
    elsewhere = fact({"a": 1}).model_copy(update={"time": instant.astimezone(timezone(timedelta(hours=2)))})
    assert not _same_values(fact({"a": 1}, time=instant), elsewhere)
    assert_as_before(fact({"a": 1}, time=instant), elsewhere)
