"""The outcome that ends a run is marked so (extension ``intentbusrunended``) by record, and the bus sends
it to no stage: no step follows it, so decide would only record it. Subscribers still get it.

The attacks:
- a producer marks its own input: carried on to its run's outcomes, the mark would keep every one of
  them from decide and leave the run waiting forever. Validate quarantines the input, naming the field.
- a marked copy of a run's last outcome, or a genuine one, reaching decide anyway (the rule before this
  deploy, or someone past the pipeline bus's IAM): decide checks it against record's entry as any other
  outcome, and proposes nothing on a run that ended.

And where the mark would take an outcome past the extensions' bounds, the outcome goes unmarked, to
decide, which records it: nothing is lost."""

from __future__ import annotations

import pytest

from intentbus import facts
from intentbus.envelope import Envelope
from intentbus.extensions import MAX_EXTENSIONS, RUN_ENDED
from intentbus.journal import Outcome
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline, InMemoryStore
from intentbus.testing.bodies import bus_body, producer_body
from intentbus.testing.routing import route
from tests.unit import sample_workflow
from tests.unit.test_outcomes_to_decide import ORDER, RUN, TENANT

pytestmark = pytest.mark.usefixtures("sample_runs_cleared")


def completed(extensions: dict[str, str | int | bool] | None = None) -> InMemoryPipeline:
    pipeline = InMemoryPipeline([sample_workflow.workflow])
    pipeline.emit({**ORDER, "extensions": extensions or {}})
    pipeline.run_until_idle()
    state = pipeline.state(TENANT, RUN)
    assert state is not None
    assert state.status is Status.COMPLETED
    return pipeline


def outcome(pipeline: InMemoryPipeline, type_name: str) -> Envelope:
    (found,) = [envelope for envelope in pipeline.published if envelope.type == type_name]
    assert found.source == facts.WORKFLOW_SOURCE
    return found


def decided(pipeline: InMemoryPipeline) -> list[tuple[str, str, str]]:
    return [entry.step for entry in pipeline.timeline(TENANT, RUN) if entry.stage == "decide"]


def test_the_last_outcome_is_marked_and_sent_to_no_stage_the_others_to_decide() -> None:
    pipeline = completed({"comexampleorigin": "shop-eu"})

    last, earlier = outcome(pipeline, "OrderShipped"), outcome(pipeline, "OrderReserved")

    assert last.extensions == {"comexampleorigin": "shop-eu", RUN_ENDED: True}
    assert earlier.extensions == {"comexampleorigin": "shop-eu"}
    assert (route(last), route(earlier)) == (None, "decide")
    assert decided(pipeline) == [("decide", "OrderPlaced", "applied"), ("decide", "OrderReserved", "applied")]
    (completion,) = [envelope for envelope in pipeline.published if envelope.type == facts.WORKFLOW_COMPLETED]
    assert RUN_ENDED not in completion.extensions, "only the workflow's own outcome carries the mark"
    assert pipeline.quarantined == []


def test_a_producer_that_marks_its_native_envelope_is_quarantined_by_validate() -> None:
    pipeline = InMemoryPipeline([sample_workflow.workflow])
    body = producer_body(
        {**ORDER, "extensions": {RUN_ENDED: True}}, detail_type="OrderPlaced", source="shop.example"
    )

    result = pipeline.deliver("validate", body)

    assert result.outcome is Outcome.QUARANTINED
    (quarantined,) = pipeline.quarantined
    assert quarantined.field == f"extensions.{RUN_ENDED}"
    assert "set by the pipeline" in quarantined.reason
    assert pipeline.state(TENANT, RUN) is None, "no run started"


def test_a_producer_that_marks_its_cloudevent_is_quarantined_by_validate() -> None:
    pipeline = InMemoryPipeline([sample_workflow.workflow])
    structured = {
        "specversion": "1.0",
        "type": "OrderPlaced",
        "source": "shop.example",
        "id": "ce-1",
        "tenantid": TENANT,
        RUN_ENDED: True,
        "data": {"order_id": "o-1", "amount": 3},
    }

    result = pipeline.deliver(
        "validate", producer_body(structured, detail_type="OrderPlaced", source="shop.example")
    )

    assert result.outcome is Outcome.QUARANTINED
    (quarantined,) = pipeline.quarantined
    assert quarantined.field == RUN_ENDED
    assert isinstance(pipeline.store, InMemoryStore)
    assert (pipeline.store.logs, pipeline.store.states) == ({}, {}), "nothing recorded: no run started"


def test_a_marked_last_outcome_that_reaches_decide_anyway_is_recorded_and_proposes_nothing() -> None:
    """As an outcome queued for decide by the rule before this deploy would: checked against record's
    entry, recorded, nothing proposed (the run has ended)."""
    pipeline = completed()
    last = outcome(pipeline, "OrderShipped")

    result = pipeline.deliver("decide", bus_body(last))

    assert result.outcome is Outcome.APPLIED
    assert result.published == ()
    assert decided(pipeline)[-1] == ("decide", "OrderShipped", "applied")
    assert pipeline.quarantined == []


def test_a_forged_copy_of_the_marked_last_outcome_sent_to_decide_is_quarantined() -> None:
    pipeline = completed()
    forged = outcome(pipeline, "OrderShipped").model_copy(update={"id": "evt-forged"})

    result = pipeline.deliver("decide", bus_body(forged))

    assert result.outcome is Outcome.QUARANTINED
    (quarantined,) = pipeline.quarantined
    assert quarantined.reason.endswith("record recorded no OrderShipped evt-forged like this one")


def test_at_the_extensions_bound_the_last_outcome_goes_unmarked_to_decide_which_records_it() -> None:
    many: dict[str, str | int | bool] = {f"comexample{n}": n for n in range(MAX_EXTENSIONS)}
    pipeline = completed(many)

    last = outcome(pipeline, "OrderShipped")

    assert last.extensions == many, "unmarked: the mark would be one extension too many"
    assert route(last) == "decide"
    assert decided(pipeline)[-1] == ("decide", "OrderShipped", "applied")
    assert pipeline.quarantined == []
