"""A record's body is parsed once: the handler's claimed ids and the stage's read share the parse, and a
reader that may change what it got (the stage) takes it for itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

from intentbus import inbound, telemetry
from intentbus.errors import MalformedInput
from intentbus.inbound import parse_bus_event

BODY = json.dumps(
    {
        "version": "0",
        "id": "e-1",
        "detail-type": "SignupReceived",
        "source": "crm.example",
        "account": "123456789012",
        "time": "2026-01-01T00:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {"id": "evt-1", "tenant_id": "acme", "type": "SignupReceived", "payload": {"plan": "pro"}},
    }
)


def _detail(event: Any) -> dict[str, Any]:
    detail: dict[str, Any] = event.detail
    return detail


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    loads = inbound._strict_loads

    def counted(text: str) -> Any:
        seen.append(text)
        return loads(text)

    monkeypatch.setattr(inbound, "_strict_loads", counted)
    return seen


def test_the_claimed_ids_and_the_stage_share_one_parse(parses: list[str]) -> None:
    body = "".join(BODY)  # a body of its own, as each SQS record's is
    assert telemetry.claimed_ids(body)["tenant_id"] == "acme"
    assert _detail(parse_bus_event(body))["tenant_id"] == "acme"
    assert len(parses) == 1


def test_the_stage_takes_the_parse_for_itself(parses: list[str]) -> None:
    body = "".join(BODY)
    telemetry.claimed_ids(body)
    _detail(parse_bus_event(body))["payload"]["plan"] = "changed by the stage"
    assert _detail(parse_bus_event(body))["payload"]["plan"] == "pro"
    assert len(parses) == 2


def test_an_equal_body_that_is_another_message_is_parsed_again(parses: list[str]) -> None:
    telemetry.claimed_ids("".join(BODY))
    parse_bus_event("".join(BODY))
    assert len(parses) == 2


def test_a_lone_surrogate_escape_is_still_refused() -> None:
    body = BODY.replace('"pro"', '"\\ud800"')
    telemetry.claimed_ids(body)
    with pytest.raises(MalformedInput, match="unpaired surrogate escape"):
        parse_bus_event(body)


STRICT_CASES = [
    BODY,
    "\ufeff" + BODY,
    BODY[:-1],
    "",
    "  [1, 2.5, -0.0, 1e400]",
    '{"a": NaN}',
    '{"a": Infinity}',
    '{"a": -Infinity}',
    '{"a": 1} x',
    '{"a": "\\ud800"}',
    '"' + "1" * 5000 + '"',
    "1" * 5000,
    "[" * 3000 + "]" * 3000,
    '{"a": 1, "a": 2.0}',
]


def _outcome(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", parse(text)
    except (ValueError, RecursionError) as error:
        return type(error).__name__, str(error)


@pytest.mark.parametrize("text", STRICT_CASES)
def test_the_decoder_made_once_parses_and_refuses_as_json_loads_did(text: str) -> None:
    def as_before(value: str) -> Any:
        return json.loads(value, parse_float=inbound._finite, parse_constant=inbound._no_constant)

    mine, before = _outcome(inbound._strict_loads, text), _outcome(as_before, text)
    assert mine == before
    if mine[0] == "value":
        assert json.dumps(mine[1]) == json.dumps(before[1])  # 1 and 1.0, -0.0 and 0.0 told apart
