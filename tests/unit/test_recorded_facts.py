"""A fact is recorded only as its stage published it: the same id and the same content, whatever its trace
context and the order of its keys; a value of another JSON type is another fact."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from intentbus.envelope import Envelope, Kind
from intentbus.journal import LogEntry, Outcome
from intentbus.stages.common import fact_digest, recorded, same_fact


def fact(payload: dict[str, Any], **fields: Any) -> Envelope:
    return Envelope(
        id="fact-1",
        source="intentbus.pipeline",
        type="EventAccepted",
        time=datetime(2026, 1, 1, tzinfo=UTC),
        kind=Kind.EVENT,
        tenant_id="acme",
        trace_id="tr-1",
        run_id="run-1",
        step_index=0,
        correlation_id="run-1",
        payload=payload,
        **fields,
    )


def entry(*outputs: Envelope) -> LogEntry:
    return LogEntry(
        stage="validate",
        input_id="in-1",
        input_type="SignupReceived",
        outcome=Outcome.APPLIED,
        at=datetime(2026, 1, 1, tzinfo=UTC),
        version=0,
        outputs=outputs,
    )


PAYLOAD = {"plan": "pro", "seats": 1, "trial": False, "tags": ["a", {"x": 1, "y": None}]}


def test_the_fact_as_published_with_the_publishers_trace_context_is_recorded() -> None:
    published = fact(PAYLOAD, traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    assert recorded(entry(fact(PAYLOAD)), published)


def test_the_same_content_with_its_keys_in_another_order_is_recorded() -> None:
    """A claim-checked payload comes back as canonical JSON, its keys sorted."""
    reordered = {"trial": False, "tags": ["a", {"y": None, "x": 1}], "seats": 1, "plan": "pro"}
    assert same_fact(fact(PAYLOAD), fact(reordered))
    assert recorded(entry(fact(PAYLOAD)), fact(reordered))


@pytest.mark.parametrize(
    "changed",
    [
        {**PAYLOAD, "seats": 1.0},
        {**PAYLOAD, "seats": True},
        {**PAYLOAD, "trial": 0},
        {**PAYLOAD, "tags": ["a", {"x": 1}]},
        {**PAYLOAD, "plan": "enterprise"},
        {"tags": ["a", {"y": None, "x": 2}], "seats": 1, "plan": "pro", "trial": False},
    ],
)
def test_a_value_changed_even_to_one_python_calls_equal_is_not_recorded(changed: dict[str, Any]) -> None:
    assert fact_digest(fact(PAYLOAD)) != fact_digest(fact(changed))
    assert not same_fact(fact(PAYLOAD), fact(changed))
    assert not recorded(entry(fact(PAYLOAD)), fact(changed))


def test_another_field_or_another_id_is_not_recorded() -> None:
    assert not recorded(entry(fact(PAYLOAD)), fact(PAYLOAD, subject="other"))
    other_id = fact(PAYLOAD).model_copy(update={"id": "fact-2"})
    assert not recorded(entry(fact(PAYLOAD)), other_id)
    assert not recorded(None, fact(PAYLOAD))
