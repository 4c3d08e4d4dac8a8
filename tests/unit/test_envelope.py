from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from intentbus.catalog import Catalog
from intentbus.definition import Workflow
from intentbus.envelope import Kind
from intentbus.ids import INTENTBUS_NAMESPACE, canonical_json, derive_id, idempotency_key
from intentbus.inbound import normalize, parse_bus_event
from intentbus.policy import Policy
from intentbus.registry import Payload
from intentbus.workflows import direct_tool, incident
from tests.fakes import raw_body

SEED = (Path(__file__).parents[2] / "infra" / "events" / "seed_tool_call.json").read_text()


def catalog() -> Catalog:
    return Catalog([incident.workflow, direct_tool.workflow])


def test_the_seed_envelope_is_accepted_verbatim() -> None:
    body = raw_body(json.loads(SEED), detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example")
    envelope, payload = normalize(parse_bus_event(body), catalog().types)
    assert envelope.kind is Kind.COMMAND
    assert envelope.type == "TOOL_EXECUTION_REQUESTED"
    assert envelope.time.timestamp() == 1791859200
    assert (envelope.trace_id, envelope.run_id, envelope.step_index) == (
        "tr_9f82b1c4e20148",
        "run_01hx7a9e8v7p2m",
        3,
    )
    assert envelope.idempotency_key == "idem_8f3a01c9a4b2e67"
    assert envelope.source == "crm.example"
    assert payload.model_dump() == json.loads(SEED)["payload"]


def test_an_event_without_an_id_gets_the_same_id_every_time() -> None:
    body = raw_body(json.loads(SEED), detail_type="TOOL_EXECUTION_REQUESTED")
    first, _ = normalize(parse_bus_event(body), catalog().types)
    second, _ = normalize(parse_bus_event(body), catalog().types)
    assert first.id == second.id


def test_cloudevents_structured_mode_with_extensions() -> None:
    detail = {
        "specversion": "1.0",
        "id": "ce-1",
        "source": "monitor",
        "type": "ServiceLatencyIncreased",
        "time": "2026-12-01T10:00:00Z",
        "datacontenttype": "application/json",
        "tenantid": "acme",
        "data": {
            "service": "checkout-api",
            "cluster": "shop",
            "environment": "dev",
            "p99_ms": 900,
            "threshold_ms": 300,
        },
    }
    envelope, _ = normalize(
        parse_bus_event(raw_body(detail, detail_type="ServiceLatencyIncreased", source="monitor")),
        catalog().types,
    )
    assert (envelope.id, envelope.tenant_id, envelope.kind) == ("ce-1", "acme", Kind.EVENT)
    assert envelope.payload["p99_ms"] == 900.0


def test_idempotency_key_follows_the_seed_formula_with_nested_payloads_canonical() -> None:
    a = idempotency_key("run", 3, {"b": {"y": 1, "x": [1, 2]}, "a": "é"})
    b = idempotency_key("run", 3, {"a": "é", "b": {"x": [1, 2], "y": 1}})
    assert a == b
    import hashlib

    expected = hashlib.sha256(
        f"run:3:{canonical_json({'a': 'é', 'b': {'x': [1, 2], 'y': 1}})}".encode()
    ).hexdigest()
    assert a == f"idem_{expected}"
    assert idempotency_key("run", 4, {"a": "é"}) != idempotency_key("run", 3, {"a": "é"})


def test_output_ids_are_uuid5_of_input_and_stage() -> None:
    derived = derive_id("evt-1", "decide", 0)
    assert derived == str(uuid.uuid5(INTENTBUS_NAMESPACE, "evt-1:decide:0"))
    assert uuid.UUID(derived).version == 5
    assert derived != derive_id("evt-1", "authorize", 0)


def test_json_schema_exported_for_every_type() -> None:
    schemas = catalog().types.json_schemas()
    assert schemas["scale_service"]["properties"]["payload"]["properties"]["desired_count"]["minimum"] == 1
    assert schemas["EventAccepted"]["properties"]["kind"] == {"const": "event", "title": "Kind"}
    assert len(schemas) == len(list(catalog().types))


def test_an_envelopes_json_is_what_it_holds_serialized_once_and_a_changed_copy_has_its_own() -> None:
    body = raw_body(json.loads(SEED), detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example")
    envelope, _ = normalize(parse_bus_event(body), catalog().types)
    text = envelope.json_text
    assert json.loads(text) == envelope.to_json_dict()
    assert envelope.json_text is text, "serialized once"
    assert envelope.model_copy().json_text == text
    moved = envelope.model_copy(update={"version": envelope.version + 1})
    assert json.loads(moved.json_text)["version"] == envelope.version + 1
    assert moved == envelope.model_copy(update={"version": envelope.version + 1})
    assert moved != envelope


def test_an_envelopes_json_escapes_what_utf8_cannot_hold() -> None:
    body = raw_body(json.loads(SEED), detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example")
    envelope, _ = normalize(parse_bus_event(body), catalog().types)
    lone = envelope.model_copy(update={"subject": "a\ud800b"})
    assert "\\ud800" in lone.json_text
    assert json.loads(lone.json_text)["subject"] == "a\ud800b"


def test_a_body_nested_past_the_limit_is_refused_and_brackets_in_text_do_not_refuse_it() -> None:
    import pytest

    from intentbus.errors import MalformedInput
    from intentbus.inbound import MAX_DEPTH

    seed = json.loads(SEED)
    deep: dict[str, object] = {}
    for _ in range(MAX_DEPTH + 1):
        deep = {"a": deep}
    too_deep = raw_body(
        {**seed, "payload": deep}, detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example"
    )
    with pytest.raises(MalformedInput, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_bus_event(too_deep)
    shallow = {**seed, "payload": {**seed["payload"], "note": "{[" * MAX_DEPTH}}
    body = raw_body(shallow, detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example")
    detail = parse_bus_event(body).detail
    assert isinstance(detail, dict)
    assert detail["payload"]["note"] == "{[" * MAX_DEPTH


def test_an_envelopes_and_a_payloads_json_values_are_their_model_dumps() -> None:
    """``to_json_dict`` and ``json_values`` call the serializer themselves: the values
    ``model_dump(mode="json")`` gives, of the same types, and the same JSON text once encoded."""
    from intentbus import facts
    from intentbus.model_shortcuts import json_values

    body = raw_body(json.loads(SEED), detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example")
    envelope, _ = normalize(parse_bus_event(body), catalog().types)
    odd = envelope.model_copy(
        update={"payload": {"n": 1, "f": 1.0, "t": True, "nested": [{"x": None}], "é": "\u2028"}}
    )
    for one in (envelope, odd):
        assert one.to_json_dict() == one.model_dump(mode="json")
        assert canonical_json(one.to_json_dict()) == canonical_json(one.model_dump(mode="json"))
        accepted = facts.EventAccepted(event=one)
        assert json.dumps(json_values(accepted)) == json.dumps(accepted.model_dump(mode="json"))


class _Trimmed(Payload):
    """A workflow's payload model with its own validate and dump, which normalize must call."""

    service: str

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> _Trimmed:
        return super().model_validate({**obj, "service": str(obj["service"]).strip()}, *args, **kwargs)

    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {**super().model_dump(*args, **kwargs), "service": self.service.upper()}


def test_a_payload_model_that_overrides_validate_or_dump_is_validated_and_dumped_by_its_own() -> None:
    own = Workflow(name="own", version="1", policy=Policy(rules=()))
    own.event("Trimmed", _Trimmed)
    detail = {"type": "Trimmed", "tenant_id": "acme", "payload": {"service": "  checkout "}}
    body = raw_body(detail, detail_type="Trimmed", source="monitor")
    envelope, payload = normalize(parse_bus_event(body), Catalog([own]).types)
    assert isinstance(payload, _Trimmed)
    assert payload.service == "checkout"
    assert envelope.payload == {"service": "CHECKOUT"}
