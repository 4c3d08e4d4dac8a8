"""record's check that an outcome is of the authorized command: the digest of the command's JSON as the
outcome carries it, when that matches, answers as the command's own ``fact_digest`` does."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from intentbus.envelope import Envelope
from intentbus.facts import CommandExecuted
from intentbus.stages.common import fact_digest
from intentbus.stages.record import _same_command
from tests.unit.test_digests import TRACED, _text, _values, command


def carried(cmd: Envelope) -> dict[str, Any]:
    """The command as execute's outcome carries it: the fact's payload dumped, sent as JSON, read back."""
    text = json.dumps(CommandExecuted(command=cmd, result={"ok": True}).model_dump(mode="json"))
    found: dict[str, Any] = json.loads(text)["command"]
    return found


def read(raw: dict[str, Any]) -> Envelope:
    return CommandExecuted.model_validate({"command": raw, "result": {}}).command


@given(
    traced=st.booleans(),
    payload=st.dictionaries(_text, _values, max_size=4),
    other=st.dictionaries(_text, _values, max_size=4),
)
def test_the_carried_json_answers_as_the_commands_digest(
    traced: bool, payload: dict[str, Any], other: dict[str, Any]
) -> None:
    authorized = command(**(TRACED if traced else {})).model_copy(update={"payload": payload})
    recorded = fact_digest(authorized)
    for sent in (authorized, authorized.model_copy(update={"payload": other})):
        raw = carried(sent)
        cmd = read(raw)
        assert _same_command(recorded, cmd, raw) is (fact_digest(cmd) == recorded)
    assert _same_command(recorded, read(carried(authorized)), carried(authorized))


def test_another_command_is_refused_whatever_json_it_came_in() -> None:
    authorized = command()
    recorded = fact_digest(authorized)
    changed = authorized.model_copy(update={"payload": {**authorized.payload, "contact": "Mallory"}})
    raw = carried(changed)
    assert not _same_command(recorded, read(raw), raw)


def test_the_same_command_in_another_form_is_still_found_by_its_own_digest() -> None:
    authorized = command()
    recorded = fact_digest(authorized)
    raw = carried(authorized)
    aliased = {
        ("event_type" if key == "type" else "data" if key == "payload" else key): value
        for key, value in raw.items()
    }
    cmd = read(aliased)
    assert cmd == read(raw)
    assert _same_command(recorded, cmd, aliased)
    assert _same_command(recorded, cmd, None)
