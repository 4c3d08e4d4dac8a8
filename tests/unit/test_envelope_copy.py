"""``Envelope.model_copy`` (and a run state's) made directly is pydantic's shallow copy: the same fields,
fields set, extra and private attributes, the same dumps, and a cached JSON text kept only by a copy that
changed nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from intentbus.envelope import Envelope
from intentbus.state import Status, WorkflowState, new_run, settle
from tests.command_envelopes import command_envelope

UPDATES: list[dict[str, Any] | None] = [
    None,
    {},
    {"payload": {"service": "checkout", "n": 1.0, "flag": True}},
    {"payload": {"a": [1, 2]}, "idempotency_key": "idem_x"},
    {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": None},
]


def _pydantic_copy(envelope: Envelope, update: dict[str, Any] | None) -> Envelope:
    copied = BaseModel.model_copy(envelope, update=update)
    if update:
        copied.__dict__.pop("json_text", None)
    return copied


def _attributes(envelope: Envelope) -> tuple[Any, ...]:
    return (
        type(envelope),
        envelope.__dict__,
        envelope.__pydantic_fields_set__,
        envelope.__pydantic_extra__,
        envelope.__pydantic_private__,
    )


@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("cached", [False, True])
def test_a_copy_is_the_one_pydantic_makes(update: dict[str, Any] | None, cached: bool) -> None:
    envelope = command_envelope("k1", id="cmd-1")
    if cached:
        assert envelope.json_text  # cached in the instance's __dict__
    copied, expected = envelope.model_copy(update=update), _pydantic_copy(envelope, update)

    assert copied is not envelope
    assert _attributes(copied) == _attributes(expected)
    assert copied == expected
    assert copied.model_dump_json() == expected.model_dump_json()
    assert copied.model_dump_json(exclude_unset=True) == expected.model_dump_json(exclude_unset=True)
    assert ("json_text" in copied.__dict__) is (cached and not update)
    assert copied.json_text == expected.model_dump_json()


def test_a_copy_shares_nothing_it_could_change_with_the_original() -> None:
    envelope = command_envelope("k1", id="cmd-1")
    copied = envelope.model_copy(update={"idempotency_key": "idem_other"})

    assert copied.__dict__ is not envelope.__dict__
    assert copied.__pydantic_fields_set__ is not envelope.__pydantic_fields_set__
    assert envelope.idempotency_key != "idem_other"
    assert "idempotency_key" in copied.__pydantic_fields_set__
    with pytest.raises(ValidationError):
        copied.id = "changed"  # type: ignore[misc]  # still frozen


def test_a_deep_copy_and_a_subclass_go_pydantics_way() -> None:
    class Stamped(Envelope):
        pass

    envelope = command_envelope("k1", id="cmd-1")
    deep = envelope.model_copy(update={"depth": 3}, deep=True)
    assert deep.payload == envelope.payload
    assert deep.payload is not envelope.payload
    assert deep.depth == 3

    stamped = Stamped.model_validate(envelope.to_json_dict())
    copied = stamped.model_copy(update={"depth": 2})
    assert type(copied) is Stamped
    assert _attributes(copied) == _attributes(_pydantic_copy(stamped, {"depth": 2}))


def test_a_run_states_copy_is_the_one_pydantic_makes() -> None:
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    state = new_run(
        tenant_id="t1", run_id="run_1", workflow="incident", definition_version="v1", step_on="Seen", now=now
    )
    update = {"version": 2, "status": Status.PAUSED, "reason": "why", "results": {"c1": {"ok": True}}}
    copied, expected = state.model_copy(update=update), BaseModel.model_copy(state, update=update)

    assert type(copied) is WorkflowState
    assert (copied.__dict__, copied.__pydantic_fields_set__) == (
        expected.__dict__,
        expected.__pydantic_fields_set__,
    )
    assert (copied.__pydantic_extra__, copied.__pydantic_private__) == (None, None)
    assert copied.model_dump_json(exclude_unset=True) == expected.model_dump_json(exclude_unset=True)
    assert settle(state, status=Status.FAILED, reason="r", now=now).version == state.version + 1
    assert state.status is Status.RUNNING
