"""``Envelope.follow`` calls the model's validator on its values: the same envelopes (values, their order
and types, the fields set, the JSON) and the same refusals as constructing the model with them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from intentbus.envelope import Envelope, Kind
from intentbus.ids import derive_id

ORIGIN = Envelope(
    id="e260086c-f383-5e44-b703-173a87494798",
    source="intentbus.pipeline",
    type="EventAccepted",
    time=datetime(2026, 12, 6, 4, 5, 49, 262109, tzinfo=UTC),
    kind=Kind.EVENT,
    tenant_id="org_enterprise_alpha",
    trace_id="tr_b961deb7bdae5baea634b1c0c0bcd92e",
    run_id="run_7635e2c1321b5f1593d4",
    step_index=1,
    correlation_id="run_7635e2c1321b5f1593d4",
    payload={"event": {"id": "x"}},
)
COPIED = (
    "subject",
    "tenant_id",
    "trace_id",
    "run_id",
    "correlation_id",
    "traceparent",
    "tracestate",
    "extensions",
)
"""What ``follow`` copies from the envelope it follows."""


def validated(origin: Envelope, **arguments: Any) -> Envelope:
    """``follow`` as it was: every field validated by the model."""
    index, output_id = arguments.pop("index", 0), arguments.pop("output_id", None)
    depth, version = arguments.pop("depth", None), arguments.pop("version", None)
    step_index, stage = arguments.pop("step_index", None), arguments.pop("stage")
    return Envelope(
        id=derive_id(origin.id, stage, index) if output_id is None else output_id,
        subject=origin.subject,
        tenant_id=origin.tenant_id,
        trace_id=origin.trace_id,
        run_id=origin.run_id,
        step_index=origin.step_index if step_index is None else step_index,
        idempotency_key=arguments.pop("idempotency_key", None),
        causation_id=origin.id,
        correlation_id=origin.correlation_id,
        depth=origin.depth if depth is None else depth,
        version=origin.version if version is None else version,
        traceparent=origin.traceparent,
        tracestate=origin.tracestate,
        extensions=origin.extensions,
        **arguments,
    )


def outcome(make: Any) -> tuple[str, Any]:
    try:
        envelope = make()
    except ValidationError as error:
        return "refused", [(e["loc"], e["type"]) for e in error.errors()]
    return "made", (
        list(envelope.__dict__.items()),
        [type(value) for value in envelope.__dict__.values()],
        envelope.model_fields_set,
        envelope.__pydantic_extra__,
        envelope.__pydantic_private__,
        envelope.json_text,
    )


def assert_same(origin: Envelope, **arguments: Any) -> None:
    assert outcome(lambda: origin.follow(**arguments)) == outcome(lambda: validated(origin, **arguments))


PLAIN: dict[str, Any] = {
    "stage": "decide",
    "type": "CommandProposed",
    "kind": Kind.EVENT,
    "time": datetime(2026, 12, 6, 4, 35, tzinfo=UTC),
    "source": "intentbus.pipeline",
    "payload": {"command": {"id": "c"}, "agent": "triage"},
}


def test_a_pipeline_output_is_the_envelope_validation_makes() -> None:
    assert_same(ORIGIN, **PLAIN)
    assert_same(ORIGIN, **PLAIN, index=2, depth=3, version=7, step_index=4, idempotency_key="idem_1")
    assert_same(ORIGIN, **{**PLAIN, "type": "collect_diagnostics", "kind": Kind.COMMAND}, output_id="o-1")


def test_the_payload_is_copied_as_validation_copies_it() -> None:
    payload = {"a": {"b": 1}}
    made = ORIGIN.follow(**{**PLAIN, "payload": payload})
    assert made.payload == payload
    assert made.payload is not payload
    assert made.payload["a"] is payload["a"]


@pytest.mark.parametrize(
    "time",
    [
        datetime(2026, 12, 6, 4, 35),  # naive: read as UTC
        datetime(2026, 12, 6, 4, 35, tzinfo=timezone(timedelta(hours=2))),
        datetime(2026, 12, 6, 4, 35, tzinfo=timezone.utc),  # noqa: UP017 - another UTC object
    ],
)
def test_times_end_in_utc_as_validation_puts_them(time: datetime) -> None:
    assert_same(ORIGIN, **{**PLAIN, "time": time})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("type", "1Bad"),
        ("type", "Bad\n"),
        ("type", "x" * 129),
        ("type", "Évent"),
        ("type", ""),
        ("source", ""),
        ("source", "s" * 257),
        ("source", "é" * 256),
        ("source", "\ud800"),
        ("kind", "event"),
        ("kind", "nonsense"),
        ("payload", {"\ud800": 1}),
        ("payload", {1: 2}),
        ("payload", []),
        ("time", "2026-12-06T04:35:00Z"),
        ("time", 1796000000),
        ("step_index", -1),
        ("step_index", True),
        ("depth", "3"),
        ("version", 1.0),
        ("idempotency_key", ""),
        ("idempotency_key", "k" * 129),
        ("output_id", ""),
        ("output_id", "i" * 1025),
    ],
)
def test_other_values_are_refused_or_converted_alike(name: str, value: Any) -> None:
    assert_same(ORIGIN, **{**PLAIN, name: value})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("tenant_id", "bad tenant"),
        ("tenant_id", "_x"),
        ("tenant_id", "t" * 65),
        ("trace_id", "t" * 129),
        ("run_id", ""),
        ("correlation_id", "c" * 129),
        ("subject", "s" * 5000),
        ("traceparent", ""),
        ("traceparent", "t" * 257),
        ("tracestate", "t" * 2049),
        ("extensions", {"x": 1}),
        ("extensions", {"x": [1]}),
    ],
)
def test_what_is_copied_is_validated_too(name: str, value: Any) -> None:
    """A ``model_copy`` with an update is not validated: its values are when followed."""
    assert_same(ORIGIN.model_copy(update={name: value}), **PLAIN)


texts = st.one_of(
    st.text(alphabet="aZ09_.-é \n", max_size=3),
    st.text(min_size=60, max_size=70, alphabet="ab_"),
    st.text(min_size=125, max_size=131, alphabet="a."),
    st.text(max_size=4),
)


@settings(max_examples=300)
@given(
    type_name=texts,
    source=texts,
    tenant=texts,
    run_id=st.one_of(texts, st.none()),
    key=st.one_of(texts, st.none()),
    count=st.one_of(st.integers(min_value=-2, max_value=2), st.booleans()),
    keys=st.lists(texts, max_size=3),
)
def test_any_values_make_what_validation_makes(  # noqa: PLR0917 - drawn by hypothesis
    type_name: str, source: str, tenant: str, run_id: str | None, key: str | None, count: int, keys: list[str]
) -> None:
    origin = ORIGIN.model_copy(update={"tenant_id": tenant, "run_id": run_id})
    assert_same(
        origin,
        **{**PLAIN, "type": type_name, "source": source, "payload": dict.fromkeys(keys, 1)},
        idempotency_key=key,
        depth=count,
    )
