"""A record's body is parsed once: the handler's claimed ids and the stage's read share the parse, and a
reader that may change what it got (the stage) takes it for itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

from intentbus import inbound, telemetry
from intentbus.catalog import Catalog
from intentbus.errors import MalformedInput
from intentbus.inbound import parse_bus_event
from intentbus.journal import Outcome
from intentbus.stages import validate as validate_stage
from intentbus.stages.validate import ValidateStage
from intentbus.testing import InMemoryPipeline
from intentbus.testing.bodies import producer_body
from tests.unit import sample_workflow

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


def _order_body(order_id: str) -> str:
    detail = {
        "id": f"evt-{order_id}",
        "tenant_id": "acme",
        "type": "OrderPlaced",
        "payload": {"order_id": order_id, "amount": 3},
    }
    return producer_body(detail, detail_type="OrderPlaced", source="shop.example")


def test_validate_parses_a_producers_body_once_in_a_batch_and_accepts_it_as_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``reads`` keeps a producer's parse for ``handle`` (as it keeps an outcome event's): one parse, the
    same accepted fact and the same log entry as a record handled alone."""
    seen: list[str] = []
    parse = inbound.parse_bus_event

    def counted(body: str) -> Any:
        seen.append(body)
        return parse(body)

    monkeypatch.setattr(validate_stage, "parse_bus_event", counted)
    bodies = [_order_body("o-1"), _order_body("o-2")]
    batched = InMemoryPipeline(Catalog([sample_workflow.workflow]))
    alone = InMemoryPipeline(Catalog([sample_workflow.workflow]))
    core = batched.stages["validate"]
    assert isinstance(core, ValidateStage)
    core.prefetch(bodies)
    results = [core.handle(body, "msg") for body in bodies]
    core.end_batch()
    assert seen == bodies  # once each, in the batch's read
    expected = [alone.stages["validate"].handle(body, "msg") for body in bodies]
    assert [out.json_text for result in results for out in result.published] == [
        out.json_text for result in expected for out in result.published
    ]
    assert _logged(batched) == _logged(alone) != {}


def _logged(pipeline: InMemoryPipeline) -> dict[tuple[str, str], list[str]]:
    return {
        run: [entry.model_dump_json() for entry in pipeline.store.entries(*run)]
        for run in pipeline.store.logs
    }


def test_a_malformed_producer_body_in_a_batch_is_quarantined_with_its_reason() -> None:
    pipeline = InMemoryPipeline(Catalog([sample_workflow.workflow]))
    core = pipeline.stages["validate"]
    assert isinstance(core, ValidateStage)
    bad = _order_body("o-1").replace('"tenant_id": "acme"', '"tenant_id": "not a tenant!"')
    core.prefetch([bad])
    result = core.handle(bad, "msg")
    core.end_batch()
    assert result.outcome is Outcome.QUARANTINED
    assert result.reason is not None
    assert "tenant_id" in result.reason
