"""``authorization_for`` cuts the trace context out of the command's canonical JSON instead of encoding its
tail twice more: the same two texts as ``canonical_json_less``, so the same digests, whatever the values."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus.envelope import Envelope, Kind
from intentbus.extensions import TRACE_CONTEXT
from intentbus.ids import canonical_json, canonical_json_less
from intentbus.journal import Authorization
from intentbus.stages.common import (
    _fact_and_version,
    _with_and_without_trace,
    authorization_digest,
    authorization_for,
    fact_digest,
)

AT = datetime(2026, 1, 1, 12, 31, tzinfo=UTC)
COMMAND = Envelope(
    id="cmd-1",
    source="intentbus.pipeline",
    type="crm.update_contact",
    time=datetime(2026, 1, 1, 12, 30, tzinfo=UTC),
    kind=Kind.COMMAND,
    tenant_id="acme",
    trace_id="tr-1",
    run_id="run-1",
    step_index=2,
    correlation_id="run-1",
    payload={"note": ',"traceparent":null,"tracestate":null,"type":"x","version":0}'},
)
TRICKY = st.sampled_from(['"', "\\", '\\"', ',"tracestate":null', '","type":"', "\n", "\ud800", "ü", "}"])
_texts = st.lists(TRICKY | st.text(max_size=4), max_size=4).map("".join)


def assert_same_texts(dumped: dict[str, Any]) -> None:
    assert _with_and_without_trace(dumped) == canonical_json_less(dumped, TRACE_CONTEXT)


@given(
    traceparent=st.none() | _texts,
    tracestate=st.none() | _texts,
    type_name=_texts,
    version=st.integers(min_value=-(2**70), max_value=2**70),
)
def test_the_texts_are_those_of_canonical_json_less(
    traceparent: str | None, tracestate: str | None, type_name: str, version: int
) -> None:
    update = {"traceparent": traceparent, "tracestate": tracestate, "type": type_name, "version": version}
    assert_same_texts(COMMAND.model_copy(update=update).to_json_dict())


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},  # not an envelope's keys
        {"version": True},
        {"version": 1.0},
        {"type": 5},
        {"traceparent": 5},
        {"tracestate": ["x"]},
    ],
)
def test_other_values_are_encoded_as_before(change: dict[str, Any]) -> None:
    assert_same_texts({**COMMAND.to_json_dict(), **change})


def test_without_a_key_the_texts_are_encoded_as_before() -> None:
    dumped = COMMAND.to_json_dict()
    del dumped["tracestate"]
    assert_same_texts(dumped)


_encodable = _texts.filter(lambda text: "\ud800" not in text)
"""A lone surrogate has no UTF-8: no digest is taken of it, before as now."""


@given(traceparent=st.none() | _encodable, tracestate=st.none() | _encodable)
def test_the_digests_are_those_execute_and_record_compare(
    traceparent: str | None, tracestate: str | None
) -> None:
    command = COMMAND.model_copy(update={"traceparent": traceparent, "tracestate": tracestate})
    fact = COMMAND.follow(
        stage="authorize", type="CommandAuthorized", kind=Kind.EVENT, payload={}, time=AT, source="s"
    )
    granted = authorization_for(fact, command, 3, by="authorize", at=AT)
    assert granted.digest == authorization_digest(fact.id, command, 3)
    assert granted.command_digest == fact_digest(command)


@given(
    fact_id=_texts,
    resource_version=st.none()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.booleans()
    | st.floats(),
)
def test_the_fact_and_version_are_written_as_the_encoder_writes_them(
    fact_id: str, resource_version: int | None
) -> None:
    expected = canonical_json({"fact": fact_id, "resource_version": resource_version})
    assert _fact_and_version(fact_id, resource_version) == expected


def test_the_authorization_is_the_one_its_model_validates() -> None:
    fact = COMMAND.follow(
        stage="authorize", type="CommandAuthorized", kind=Kind.EVENT, payload={}, time=AT, source="s"
    )
    granted = authorization_for(fact, COMMAND, None, by="authorize", at=AT)
    expected = Authorization(
        command_id=COMMAND.id,
        fact_id=fact.id,
        digest=authorization_digest(fact.id, COMMAND, None),
        command_digest=fact_digest(COMMAND),
        by="authorize",
        at=AT,
    )
    assert granted == expected
    assert granted.model_fields_set == expected.model_fields_set
    assert granted.model_dump_json() == expected.model_dump_json()
