"""Each fact execute publishes carries its command as the stage read it: dumped once for the authorization
digest, the runner's key and the fact's payload, the same JSON as dumping the fact's payload whole."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_core import to_json

from intentbus import facts
from intentbus.envelope import Envelope
from intentbus.registry import Payload
from intentbus.stages.execute import payload_json
from tests.command_envelopes import command_envelope
from tests.fuzz.support import json_values


def _payloads(command: Envelope) -> list[Payload]:
    """One of each fact execute makes."""
    return [
        facts.CommandExecuted(command=command, result={"ok": True, "rows": [1, 2.5, None]}),
        facts.CommandExecuted(command=command, result={}, reconciled=True),
        facts.CommandFailed(command=command, error="refused by the target"),
        facts.CommandConflicted(
            command=command, resource="r-1", authorized_at_version=3, holder=None, reason="moved: not run"
        ),
        facts.CommandSkipped(command=command, reason="the run had ended (COMPLETED): not run"),
        facts.CommandOutcomeUnknown(command=command, reason="cannot be reconciled"),
    ]


@pytest.mark.parametrize("index", range(len(_payloads(command_envelope("k")))))
def test_a_fact_with_its_command_as_read_is_its_payload_dumped_whole(index: int) -> None:
    command = command_envelope("k", payload={"invoice": "inv-1", "amount": 1e-7, "note": "café"})
    payload = _payloads(command)[index]

    made = payload_json(payload, command.to_json_dict())

    whole = payload.model_dump(mode="json")
    assert made == whole
    assert to_json(made) == to_json(whole)  # the same keys in the same order: the same bytes


@given(payload=st.dictionaries(st.text(max_size=8), json_values, max_size=4))
def test_any_commands_fact_is_its_payload_dumped_whole(payload: dict[str, Any]) -> None:
    command = command_envelope("k", payload=payload)
    for fact in _payloads(command):
        made = payload_json(fact, command.to_json_dict())
        assert to_json(made, ensure_ascii=True) == to_json(fact.model_dump(mode="json"), ensure_ascii=True)
