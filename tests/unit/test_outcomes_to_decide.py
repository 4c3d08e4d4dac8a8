"""A workflow's outcome event goes from record straight to decide. Record's entry for the outcome it
follows is the event's proof (rule 8), as it was validate's when validate looked at it again, so the step
saves a hop, a write and a publish and trusts no less.

The attacks, each sent straight to decide's queue (someone past the pipeline bus's IAM): a real outcome
re-issued under another id, its payload changed, filed under another tenant, or with bus fields that
disagree with its envelope. Decide quarantines each, and nothing is decided or run. The real outcome sent
again is a duplicate."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from intentbus import facts
from intentbus.envelope import Envelope
from intentbus.journal import Outcome
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline
from intentbus.testing.bodies import bus_body, producer_body
from intentbus.testing.routing import route
from tests.unit import sample_workflow

TENANT = "acme"
RUN = "run-o-1"
ORDER = {
    "id": "evt-o-1",
    "tenant_id": TENANT,
    "run_id": RUN,
    "type": "OrderPlaced",
    "payload": {"order_id": "o-1", "amount": 3},
}


pytestmark = pytest.mark.usefixtures("sample_runs_cleared")


@pytest.fixture
def waiting() -> InMemoryPipeline:
    """A production run after its first step: the order reserved, shipping waits for a person."""
    pipeline = InMemoryPipeline([sample_workflow.workflow], environment="production")
    pipeline.emit(ORDER)
    pipeline.run_until_idle()
    state = pipeline.state(TENANT, RUN)
    assert state is not None
    assert state.status is Status.AWAITING_APPROVAL
    assert state.step_index == 2, "the second step, shipping"
    return pipeline


def reserved(pipeline: InMemoryPipeline) -> Envelope:
    (outcome,) = [envelope for envelope in pipeline.published if envelope.type == "OrderReserved"]
    assert outcome.source == facts.WORKFLOW_SOURCE
    return outcome


def test_validate_sees_the_producers_event_only_and_decide_each_outcome_once() -> None:
    pipeline = InMemoryPipeline([sample_workflow.workflow])
    pipeline.emit(ORDER)
    pipeline.run_until_idle()

    steps = [entry.step for entry in pipeline.timeline(TENANT, RUN)]
    assert [step for step in steps if step[0] == "validate"] == [("validate", "OrderPlaced", "applied")]
    # OrderShipped ends the run: marked so, it is sent to no stage
    assert [step for step in steps if step[0] == "decide"] == [
        ("decide", "OrderPlaced", "applied"),
        ("decide", "OrderReserved", "applied"),
    ]
    assert pipeline.outcomes[("validate", "applied")] == 1
    assert not any(envelope.type == facts.EVENT_ACCEPTED for envelope in pipeline.published[1:])
    assert pipeline.quarantined == []


def test_the_real_outcome_sent_again_is_a_duplicate_and_decides_nothing(waiting: InMemoryPipeline) -> None:
    tools = Counter(waiting.tool_runs)
    published = len(waiting.published)
    outcome = reserved(waiting)
    proposed = [(e.type, e.id) for e in waiting.published if e.causation_id == outcome.id]
    assert [kind for kind, _ in proposed] == [facts.COMMAND_PROPOSED] * 2, "ship proposes two shipments"

    result = waiting.deliver("decide", bus_body(outcome))

    assert result.outcome is Outcome.DUPLICATE
    again = [(e.type, e.id) for e in waiting.published[published:]]
    assert again == proposed, "the recorded proposals, again"
    assert waiting.tool_runs == tools
    assert waiting.quarantined == []


def in_flight(pipeline: InMemoryPipeline) -> Envelope:
    """Delivers the order stage by stage until record publishes its outcome; returns it undelivered."""
    body = producer_body(ORDER, detail_type="OrderPlaced", source=pipeline.source, event_id="eb-1")
    pending = list(pipeline.deliver("validate", body).published)
    while pending:
        envelope = pending.pop(0)
        if envelope.source == facts.WORKFLOW_SOURCE:
            return envelope
        stage = route(envelope)
        if stage is not None:
            pending.extend(pipeline.deliver(stage, bus_body(envelope)).published)
    raise AssertionError("record published no outcome")


def _reissued(outcome: Envelope) -> Envelope:
    return outcome.model_copy(update={"id": "evt-forged-1"})


def _repriced(outcome: Envelope) -> Envelope:
    return outcome.model_copy(update={"payload": {**outcome.payload, "amount": 99}})


def _other_tenant(outcome: Envelope) -> Envelope:
    return outcome.model_copy(update={"tenant_id": "globex"})


def _next_step(outcome: Envelope) -> Envelope:
    return outcome.model_copy(update={"step_index": outcome.step_index + 1})


@pytest.mark.parametrize("forge", [_reissued, _repriced, _other_tenant, _next_step])
def test_an_outcome_record_never_published_is_quarantined_by_decide_and_the_real_one_still_decided(
    forge: Any,
) -> None:
    """Sent before the real outcome reaches decide, so a forgery with the real id is not taken for it."""
    pipeline = InMemoryPipeline([sample_workflow.workflow])
    outcome = in_flight(pipeline)
    entries = len(pipeline.timeline(TENANT, RUN))
    forged = forge(outcome)

    result = pipeline.deliver("decide", bus_body(forged))

    assert result.outcome is Outcome.QUARANTINED
    assert result.published == ()
    (quarantined,) = pipeline.quarantined
    assert quarantined.stage == "decide"
    assert quarantined.reason.endswith(f"record recorded no OrderReserved {forged.id} like this one")
    assert len(pipeline.timeline(TENANT, RUN)) == entries, "nothing recorded"

    real = pipeline.deliver("decide", bus_body(outcome))
    assert real.outcome is Outcome.APPLIED
    assert [envelope.type for envelope in real.published] == [facts.COMMAND_PROPOSED] * 2
    assert {e.payload["command"]["payload"]["order_id"] for e in real.published} == {"o-1"}


@pytest.mark.parametrize(
    ("field", "value"), [("detail-type", "OrderShipped"), ("source", "intentbus.pipeline")]
)
def test_bus_fields_that_disagree_with_the_envelope_are_quarantined(field: str, value: str) -> None:
    """The envelope is the one record published; only the bus event around it lies. As another type it
    is refused; as the pipeline's source, it is read as a pipeline fact, which it is not."""
    pipeline = InMemoryPipeline([sample_workflow.workflow])
    body = json.loads(bus_body(in_flight(pipeline)))
    body[field] = value

    result = pipeline.deliver("decide", json.dumps(body))

    assert result.outcome is Outcome.QUARANTINED
    (quarantined,) = pipeline.quarantined
    assert quarantined.stage == "decide"
    state = pipeline.state(TENANT, RUN)
    assert state is not None
    assert state.step_index == 1, "the run waits for its real outcome"


@pytest.mark.parametrize("validate_first", [True, False], ids=["old-route-first", "new-route-first"])
def test_an_outcome_queued_at_validate_across_the_change_is_decided_once(validate_first: bool) -> None:
    """Across the deploy that moved outcomes to decide: an outcome published before it waits in validate's
    queue (the old rule), and record's redelivery after it publishes the same outcome again, which goes to
    decide (the new rule). Validate still accepts the first; whichever reaches decide second is stale."""
    pipeline = InMemoryPipeline([sample_workflow.workflow])
    outcome = in_flight(pipeline)
    (accepted,) = pipeline.deliver("validate", bus_body(outcome)).published
    assert accepted.type == facts.EVENT_ACCEPTED
    routes = [("decide", bus_body(accepted)), ("decide", bus_body(outcome))]
    if not validate_first:
        routes.reverse()

    first, second = (pipeline.deliver(stage, body) for stage, body in routes)

    assert first.outcome is Outcome.APPLIED
    assert [envelope.type for envelope in first.published] == [facts.COMMAND_PROPOSED] * 2
    assert second.outcome is Outcome.STALE
    assert second.published == ()
    decided = [entry.step for entry in pipeline.timeline(TENANT, RUN) if entry.stage == "decide"]
    assert decided == [
        ("decide", "OrderPlaced", "applied"),
        ("decide", "OrderReserved", "applied"),
        ("decide", "OrderReserved", "stale"),
    ]
    assert pipeline.quarantined == []
