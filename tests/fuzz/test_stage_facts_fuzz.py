"""Boundary 2: the internal stages (decide, authorize, execute, record) parsing their input facts.

The facts are real: the seeds run through the in-memory pipeline, stopped before each stage, the
store as it was then. They are mutated in the EventBridge wrapper, the envelope, and the nested
``payload.command`` / ``payload.event``. A mutated fact that is still valid may be processed
normally (applied, stale, duplicate, ...); whatever it is, nothing escapes ``handle``, and the outcome
is QUARANTINED iff exactly one quarantine record appeared. (Arbitrary bodies reach every internal
stage in ``test_validate_fuzz``: ``test_arbitrary_bodies_...`` and ``test_eventbridge_shaped_...``.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from intentbus import facts
from intentbus.journal import Outcome
from tests.fuzz.support import (
    CATALOG,
    CHECKPOINTS,
    DEEP,
    DEFECT,
    FUZZ,
    Checkpoint,
    JsonPath,
    Mutated,
    Mutation,
    assert_promise,
    get,
    last_quarantine_field,
    mutated,
    names_location,
)

INTERNAL_STAGES = ("decide", "authorize", "execute", "record")
OUTCOMES = {
    "decide": {Outcome.APPLIED, Outcome.DUPLICATE, Outcome.STALE, Outcome.PAUSED, Outcome.QUARANTINED},
    "authorize": {
        Outcome.APPLIED,
        Outcome.DUPLICATE,
        Outcome.STALE,
        Outcome.WAITING,
        Outcome.DENIED,
        Outcome.QUARANTINED,
    },
    "execute": {Outcome.APPLIED, Outcome.DUPLICATE, Outcome.QUARANTINED},
    "record": {Outcome.APPLIED, Outcome.DUPLICATE, Outcome.STALE, Outcome.DENIED, Outcome.QUARANTINED},
}
EVENT_PAYLOAD: JsonPath = ("detail", "payload", "event", "payload")
OUTCOME_PAYLOAD: JsonPath = ("detail", "payload")
"""A domain event's payload: decide reads it straight from record."""
COMMAND_PAYLOAD: JsonPath = ("detail", "payload", "command", "payload")


def under(prefix: JsonPath) -> Callable[[JsonPath], bool]:
    return lambda path: path[: len(prefix)] == prefix


def not_under(prefix: JsonPath) -> Callable[[JsonPath], bool]:
    return lambda path: path[: len(prefix)] != prefix


KEEP: dict[str, Callable[[JsonPath], bool]] = {
    # decide raises on an event payload that does not fit its type: that defect has its own test below.
    "decide": not_under(EVENT_PAYLOAD),
    "authorize": lambda path: True,
    "execute": lambda path: True,
    "record": lambda path: True,
}
NEST: dict[str, Callable[[JsonPath], bool]] = {
    # authorize serializes the command's payload unvalidated: deep nesting there raises (defect below).
    "authorize": not_under(COMMAND_PAYLOAD),
}
MUTATIONS = {
    checkpoint.name: mutated(checkpoint.document(), keep=KEEP[stage], nest=NEST.get(stage, KEEP[stage]))
    for stage, checkpoints in CHECKPOINTS.items()
    for checkpoint in checkpoints
}
FACTS = {
    stage: st.sampled_from(
        [(checkpoint, ascii_only) for checkpoint in checkpoints for ascii_only in (True, False)]
    )
    for stage, checkpoints in CHECKPOINTS.items()
}


@st.composite
def mutated_facts(draw: st.DrawFn, stage: str) -> tuple[Checkpoint, Mutated, bool]:
    checkpoint, ascii_only = draw(FACTS[stage])
    return checkpoint, draw(MUTATIONS[checkpoint.name]), ascii_only


MUTATED_FACTS = {stage: mutated_facts(stage) for stage in INTERNAL_STAGES}


def deliver(case: tuple[Checkpoint, Mutated, bool]) -> tuple[Any, Any]:
    checkpoint, change, ascii_only = case
    pipeline = checkpoint.pipeline()
    return pipeline, assert_promise(pipeline, checkpoint.stage, change.text(ensure_ascii=ascii_only))


@pytest.mark.parametrize("stage", INTERNAL_STAGES)
@FUZZ
@given(data=st.data())
def test_mutated_facts_never_escape_and_are_quarantined_or_processed(stage: str, data: st.DataObject) -> None:
    case = data.draw(MUTATED_FACTS[stage], label="fact")
    _, result = deliver(case)
    assert result.outcome in OUTCOMES[stage], result.outcome
    if not case[1].mutations:
        assert result.outcome in {Outcome.APPLIED, Outcome.DENIED}, result.reason


@pytest.mark.parametrize("checkpoint", [c for cs in CHECKPOINTS.values() for c in cs], ids=lambda c: c.name)
def test_real_facts_are_processed_normally_and_redelivery_is_a_duplicate(checkpoint: Checkpoint) -> None:
    pipeline = checkpoint.pipeline()
    first = assert_promise(pipeline, checkpoint.stage, checkpoint.body)
    assert first.outcome in {Outcome.APPLIED, Outcome.DENIED}, first.reason
    again = assert_promise(pipeline, checkpoint.stage, checkpoint.body)
    assert again.outcome is Outcome.DUPLICATE
    assert again.published == first.published


# ---------------------------------------------------------------------------------------------
# Defects found by these tests (strict xfail: each passes once the library is fixed)


def _invalid_for(model: Any, payload: Any) -> bool:
    try:
        model.model_validate(payload)
    except ValidationError:
        return True
    return False


def _event_in(document: dict[str, Any]) -> Any:
    """The event decide decides on: an EventAccepted's, or the domain event itself (straight from record)."""
    detail = document["detail"]
    if not isinstance(detail, dict) or detail.get("source") == facts.WORKFLOW_SOURCE:
        return detail
    payload = detail.get("payload")
    return payload.get("event", {}) if isinstance(payload, dict) else {}


def _has_agent(checkpoint: Checkpoint) -> bool:
    step = CATALOG.step("incident_response", _event_in(checkpoint.document())["type"])
    return step is not None and step.agent is not None


def _is_outcome(checkpoint: Checkpoint) -> bool:
    return bool(checkpoint.document()["detail"]["source"] == facts.WORKFLOW_SOURCE)


def _mutations_under(
    checkpoints: list[Checkpoint], prefix: JsonPath
) -> st.SearchStrategy[tuple[Checkpoint, Mutated]]:
    by_name = {c.name: mutated(c.document(), keep=under(prefix)) for c in checkpoints}
    which = st.sampled_from(checkpoints)

    @st.composite
    def cases(draw: st.DrawFn) -> tuple[Checkpoint, Mutated]:
        checkpoint = draw(which)
        return checkpoint, draw(by_name[checkpoint.name])

    return cases()


DECIDED_WITH_AGENT = [c for c in CHECKPOINTS["decide"] if _has_agent(c)]
"""The events decide asks an agent about: the accepted alert, then the outcomes record published (each one
decide is sent has a step)."""
EVENT_PAYLOAD_MUTATIONS = st.one_of(
    _mutations_under([c for c in DECIDED_WITH_AGENT if not _is_outcome(c)], EVENT_PAYLOAD),
    _mutations_under([c for c in DECIDED_WITH_AGENT if _is_outcome(c)], OUTCOME_PAYLOAD),
)
FIRST_DECIDE = DECIDED_WITH_AGENT[0]
FIRST_OUTCOME = next(c for c in DECIDED_WITH_AGENT if _is_outcome(c))


def _without(checkpoint: Checkpoint, path: JsonPath) -> Mutated:
    document = checkpoint.document()
    del get(document, path[:-1])[path[-1]]
    return Mutated(document, [Mutation("delete", path)])


def _with(checkpoint: Checkpoint, path: JsonPath, value: Any) -> Mutated:
    document = checkpoint.document()
    get(document, path[:-1])[path[-1]] = value
    return Mutated(document, [Mutation("replace", path)])


@DEFECT
@given(case=EVENT_PAYLOAD_MUTATIONS)
@example(case=(FIRST_DECIDE, _without(FIRST_DECIDE, (*EVENT_PAYLOAD, "service"))))
@example(case=(FIRST_OUTCOME, _with(FIRST_OUTCOME, OUTCOME_PAYLOAD, {})))
def test_an_accepted_event_whose_payload_does_not_fit_its_type_is_quarantined(
    case: tuple[Checkpoint, Mutated],
) -> None:
    checkpoint, change = case
    event = _event_in(change.document)
    assume(change.deep is None and change.pad is None)
    assume(
        isinstance(event, dict)
        and event.get("type") in CATALOG.types
        and isinstance(event.get("payload"), dict)
    )
    assume(_invalid_for(CATALOG.types.get(event["type"]).model, event["payload"]))
    pipeline = checkpoint.pipeline()
    result = assert_promise(pipeline, "decide", change.text(ensure_ascii=True))
    assert result.outcome is Outcome.QUARANTINED


@pytest.mark.parametrize(
    ("field", "value"),
    [("kind", "command"), ("kind", "decision"), ("type", "collect_diagnostics"), ("type", "scale_service")],
)
def test_an_accepted_event_that_is_not_an_event_is_quarantined(field: str, value: str) -> None:
    change = _with(FIRST_DECIDE, ("detail", "payload", "event", field), value)
    pipeline = FIRST_DECIDE.pipeline()
    result = assert_promise(pipeline, "decide", change.text(ensure_ascii=True))
    assert result.outcome is Outcome.QUARANTINED, (result.outcome, result.reason, result.published)


PROPOSALS = CHECKPOINTS["authorize"]
COMMAND_PAYLOAD_MUTATIONS = _mutations_under(PROPOSALS, COMMAND_PAYLOAD)
DIRECT_PROPOSAL = next(c for c in PROPOSALS if c.name.startswith("seed_tool_call"))


@DEFECT
@given(case=COMMAND_PAYLOAD_MUTATIONS)
@example(case=(PROPOSALS[0], _with(PROPOSALS[0], COMMAND_PAYLOAD, {})))
@example(case=(DIRECT_PROPOSAL, _with(DIRECT_PROPOSAL, COMMAND_PAYLOAD, {})))
def test_a_proposed_command_whose_payload_does_not_fit_its_type_is_quarantined(
    case: tuple[Checkpoint, Mutated],
) -> None:
    checkpoint, change = case
    command = change.document["detail"].get("payload", {}).get("command", {})
    assume(isinstance(command, dict) and isinstance(command.get("payload"), dict))
    spec = CATALOG.command(str(command.get("type")))
    assume(spec is not None)
    assert spec is not None
    assume(change.deep is None and change.pad is None)
    assume(_invalid_for(spec.model, command["payload"]))
    pipeline = checkpoint.pipeline()
    result = assert_promise(pipeline, "authorize", change.text(ensure_ascii=True))
    assert result.outcome is Outcome.QUARANTINED, (
        result.outcome,
        result.reason,
        [e.type for e in result.published],
    )


@pytest.mark.parametrize("depth", [256, 300, 600])  # past ~950 json.loads refuses it (quarantined)
def test_deep_nesting_in_a_proposed_command_payload_is_quarantined(depth: int) -> None:
    document = PROPOSALS[0].document()
    get(document, COMMAND_PAYLOAD)["service"] = DEEP
    body = Mutated(document, deep=(depth, "list")).text(ensure_ascii=True)
    result = assert_promise(PROPOSALS[0].pipeline(), "authorize", body)
    assert result.outcome is Outcome.QUARANTINED


AUTHORIZED = CHECKPOINTS["execute"][0]


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("detail", "payload", "verdict", "effect"), "deny"),
        (("detail", "payload", "verdict", "effect"), "require_approval"),
        (("detail", "payload", "command", "kind"), "event"),
    ],
)
def test_execute_runs_only_what_authorize_allowed(path: JsonPath, value: str) -> None:
    change = _with(AUTHORIZED, path, value)
    pipeline = AUTHORIZED.pipeline()
    result = assert_promise(pipeline, "execute", change.text(ensure_ascii=True))
    assert not pipeline.runner.results.keys() - AUTHORIZED.runner.results.keys(), "the tool ran"
    assert result.outcome is Outcome.QUARANTINED


FIELD_BASES: tuple[JsonPath, ...] = ((), ("detail",), ("detail", "payload"))
"""Fields may be named from the body, from the envelope (``detail``), or from the fact's payload."""


def _first_of(stage: str) -> Checkpoint:
    return CHECKPOINTS[stage][0]


FIELD_EXAMPLES = {
    "decide": _without(_first_of("decide"), ("detail", "payload", "event", "tenant_id")),
    "authorize": _without(_first_of("authorize"), ("detail", "payload", "decision_id")),
    "execute": _without(_first_of("execute"), ("detail", "payload", "verdict")),
    "record": _with(_first_of("record"), ("detail", "payload", "result"), 7),
}


@DEFECT
@given(case=st.one_of(*MUTATED_FACTS.values()))
@example(case=(_first_of("decide"), FIELD_EXAMPLES["decide"], True))
@example(case=(_first_of("authorize"), FIELD_EXAMPLES["authorize"], True))
@example(case=(_first_of("execute"), FIELD_EXAMPLES["execute"], True))
@example(case=(_first_of("record"), FIELD_EXAMPLES["record"], True))
@example(
    case=(
        _first_of("decide"),
        _with(_first_of("decide"), ("detail", "payload", "event", "type"), "Nope"),
        True,
    )
)
def test_quarantine_fields_name_the_mutated_location(case: tuple[Checkpoint, Mutated, bool]) -> None:
    checkpoint, change, ascii_only = case
    pipeline = checkpoint.pipeline()
    result = assert_promise(pipeline, checkpoint.stage, change.text(ensure_ascii=ascii_only))
    if result.outcome is not Outcome.QUARANTINED:
        return
    field = last_quarantine_field(pipeline)
    if field is None or any(m.op in ("deep", "pad") or m.path == () for m in change.mutations):
        return  # a replaced root has every field under it
    assert any(names_location(field, m.path, bases=FIELD_BASES) for m in change.mutations), (
        field,
        [str(m) for m in change.mutations],
    )


def test_the_seed_facts_cover_every_input_type() -> None:
    seen = {stage: {json.loads(c.body)["detail-type"] for c in cs} for stage, cs in CHECKPOINTS.items()}
    assert seen == {
        # the alert accepted by validate, then each outcome straight from record but the last
        # (RecoveryCompleted ends the run: sent to no stage)
        "decide": {
            facts.EVENT_ACCEPTED,
            "DiagnosisRequested",
            "DependencyFailureSuspected",
            "RecoveryProposed",
        },
        "authorize": {facts.COMMAND_PROPOSED},
        "execute": {facts.COMMAND_AUTHORIZED},
        "record": {facts.COMMAND_EXECUTED, facts.COMMAND_FAILED, facts.COMMAND_DENIED},
    }
