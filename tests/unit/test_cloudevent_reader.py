"""``read_cloudevent`` reads an event in the envelope's own names (as the pipeline publishes them) without
its per-attribute loop: it must read every event exactly as that loop does, a producer's forged ones too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus.cloudevent import ENVELOPE_NAMES, read_by_names, read_cloudevent
from intentbus.errors import MalformedInput
from intentbus.extensions import WORKFLOW_ATTRIBUTES
from intentbus.testing import InMemoryPipeline
from tests.fakes import raw_body
from tests.unit.test_cloudevents import CATALOG, LATENCY, LATENCY_DATA

_NAMES = sorted(ENVELOPE_NAMES) + sorted(WORKFLOW_ATTRIBUTES) + ["data", "data_base64", "comexampleorigin"]
_VALUES = st.one_of(st.none(), st.sampled_from(["acme", "other", "1.0"]), st.integers(0, 2))


@given(st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=12))
def test_every_event_is_read_as_the_loop_reads_it(detail: dict[str, Any]) -> None:
    try:
        expected: tuple[Any, ...] = ("read", *read_by_names(detail))
    except MalformedInput as error:
        expected = ("refused", error.field)
    try:
        fields, data = read_cloudevent(detail)
        got: tuple[Any, ...] = ("read", fields, data)
    except MalformedInput as error:
        got = ("refused", error.field)
    assert got[0] == expected[0]
    if got[0] == "read":
        assert list(got[1].items()) == list(expected[1].items())  # the same fields, in the same order
        assert got[2] == expected[2]
    else:
        assert got[1] == expected[1]


def _in_own_names(**more: Any) -> dict[str, Any]:
    """An event as the pipeline publishes one: every attribute in the envelope's own names."""
    return {
        "specversion": "1.0",
        "id": "evt-1",
        "source": "monitor",
        "type": LATENCY,
        "subject": None,
        "kind": "event",
        "tenant_id": "acme",
        "payload": LATENCY_DATA,
        "traceparent": None,
        "extensions": {},
        **more,
    }


def _validated(detail: dict[str, Any]) -> tuple[str, str | None, str | None]:
    pipeline = InMemoryPipeline(CATALOG)
    result = pipeline.deliver("validate", raw_body(detail, detail_type=LATENCY, source="monitor"))
    if not pipeline.quarantine.records:
        assert result.envelope is not None
        return result.outcome.value, result.envelope.tenant_id, None
    record = pipeline.quarantine.records[-1]
    return result.outcome.value, record["reason"], record["field"]


def test_an_event_in_the_envelopes_own_names_is_accepted_with_its_nulls_unset() -> None:
    assert _validated(_in_own_names()) == ("applied", "acme", None)


@pytest.mark.parametrize(("alias", "field"), [("tenantid", "tenant_id"), ("runid", "run_id")])
def test_an_alias_beside_the_own_name_is_still_refused_when_they_disagree(alias: str, field: str) -> None:
    # The attack: a producer names its tenant (or run) twice, hoping one is bound and the other kept.
    outcome, reason, told = _validated(_in_own_names(**{field: "acme", alias: "other"}))
    assert (outcome, told) == ("quarantined", alias)
    assert reason == f"{alias} and {field} disagree: send one"


def test_an_extension_attribute_beside_an_extensions_object_is_still_refused() -> None:
    # The attack: an extension sent both ways, hoping the attribute escapes the object's bounds.
    outcome, reason, told = _validated(_in_own_names(extensions={"team": "sre"}, comexampleteam="x" * 9000))
    assert (outcome, told) == ("quarantined", "extensions")
    assert reason == "extension attributes and an extensions object: send the attributes"


def test_data_beside_a_payload_in_own_names_is_still_refused() -> None:
    # The attack: a payload the type's model checks and data it does not, hoping one slips through.
    outcome, reason, told = _validated(_in_own_names(data=json.loads('{"service": "x"}')))
    assert (outcome, told) == ("quarantined", "payload")
    assert reason == "data and payload: send the payload as data"
