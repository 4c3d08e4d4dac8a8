"""The registry knows the pipeline's facts by name and makes each one's spec (importing its payload model)
the first time it is asked for; a deferred type behaves as one registered up front."""

from __future__ import annotations

import pytest

from intentbus import facts
from intentbus.catalog import Catalog
from intentbus.envelope import Kind
from intentbus.registry import REDACTED, WITHHELD, DuplicateType, TypeRegistry, TypeSpec, UnknownType
from intentbus.workflows import incident


class _Counted:
    """``facts.pipeline_type``, counting the specs it makes."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def __call__(self, name: str) -> TypeSpec:
        self.made.append(name)
        return facts.pipeline_type(name)


def test_a_deferred_type_is_known_before_its_spec_is_made_and_made_once() -> None:
    make = _Counted()
    types = TypeRegistry(deferred={facts.COMMAND_PROPOSED: make, facts.EVENT_ACCEPTED: make})

    assert facts.COMMAND_PROPOSED in types
    assert "NoSuchType" not in types
    assert make.made == []

    spec = types.get(facts.COMMAND_PROPOSED)
    again = types.get(facts.COMMAND_PROPOSED)

    assert spec is again
    assert spec == TypeSpec(facts.COMMAND_PROPOSED, Kind.EVENT, facts.CommandProposed, "intentbus")
    assert make.made == [facts.COMMAND_PROPOSED]
    with pytest.raises(UnknownType):
        types.get("NoSuchType")


def test_a_type_named_like_a_deferred_fact_is_a_duplicate() -> None:
    types = TypeRegistry(deferred={facts.EVENT_ACCEPTED: facts.pipeline_type})
    forged = TypeSpec(facts.EVENT_ACCEPTED, Kind.EVENT, incident.ServiceLatencyIncreased, "incident")

    with pytest.raises(DuplicateType, match="declared by both 'intentbus' and 'incident'"):
        types.add(forged)


def test_every_pipeline_fact_is_listed_redacted_and_exported_as_before() -> None:
    types = Catalog([incident.workflow]).types

    listed = {spec.name: spec for spec in types}
    proposed = {"command": {}, "decision_id": "d-1", "rationale": "because", "evidence": {"k": "v"}}

    assert set(listed) >= facts.PIPELINE_TYPE_NAMES
    assert all(listed[name].model is getattr(facts, name) for name in facts.PIPELINE_TYPE_NAMES)
    assert all(listed[name].owner == "intentbus" for name in facts.PIPELINE_TYPE_NAMES)
    assert types.redact(facts.COMMAND_PROPOSED, proposed)["rationale"] == REDACTED
    assert types.redact("NoSuchType", proposed) == WITHHELD
    assert types.sensitive_fields(facts.COMMAND_PROPOSED) == {"rationale", "evidence"}
    assert set(types.json_schemas()) >= facts.PIPELINE_TYPE_NAMES


def test_a_name_that_is_no_fact_is_no_attribute_of_the_facts_module() -> None:
    with pytest.raises(AttributeError, match="NoSuchFact"):
        _ = facts.NoSuchFact
