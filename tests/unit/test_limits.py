"""Every field a producer sends, an agent proposes and a tool returns is bounded; large facts travel by
claim check, resolved and verified by the stage that reads them.

The attacks: a producer sending oversized fields (a 200 KB ``subject``, a payload past the hard
maximum, a claim reference of its own); an agent padding its rationale and evidence; a tool returning
more than a fact can carry; someone with write access to the claim-check bucket swapping or deleting
an object between publish and read.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from intentbus import facts
from intentbus.adapters.eventbridge_bus import to_entry
from intentbus.claims import (
    CLAIM_FIELD,
    InMemoryClaims,
    OversizedFact,
    check_in,
    check_out,
    fit,
    published_size,
    reference_of,
)
from intentbus.envelope import MAX_ID_CHARS, MAX_SCHEMA_URI_CHARS, MAX_TRACESTATE_CHARS, Envelope, Kind
from intentbus.errors import MalformedInput
from intentbus.extensions import MAX_EXTENSIONS_BYTES
from intentbus.journal import Outcome
from intentbus.limits import (
    DEFAULT_CLAIM_CHECK_BYTES,
    MAX_CLAIM_CHECK_BYTES,
    MAX_PAYLOAD_BYTES,
    MAX_RESULT_BYTES,
    MAX_SUBJECT_CHARS,
    PUT_EVENTS_LIMIT_BYTES,
    bounded_result,
    claim_check_threshold,
    cut,
    entry_size,
    json_bytes,
)
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline
from intentbus.testing.bodies import bus_body, producer_body
from intentbus.testing.routing import route
from tests import large_workflow

TENANT = "acme"
KB = 1024
NOTE_DEFAULTS = {"note_id": "n-1", "text": "", "echo": False, "loud": False, "pad_rationale": 0}
"""A NoteFiled's payload as it travels (its model's defaults filled in), with an empty text."""


def note(note_id: str = "n-1", text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {
        "id": f"evt-{note_id}",
        "tenant_id": TENANT,
        "run_id": f"run-{note_id}",
        "type": large_workflow.FILED,
        "payload": {"note_id": note_id, "text": text, **extra.pop("payload", {})},
        **extra,
    }


@pytest.fixture
def pipeline() -> InMemoryPipeline:
    return InMemoryPipeline([large_workflow.workflow])


def largest_entry(pipeline: InMemoryPipeline) -> int:
    return max(entry_size(to_entry(envelope, "bus")) for envelope in pipeline.published)


# ------------------------------------------------------------------ a producer's fields


def test_a_200_kb_subject_is_quarantined_at_validate_and_nothing_is_published(
    pipeline: InMemoryPipeline,
) -> None:
    # The attack: a producer sets a 200 KB subject, which every fact used to copy (twice per fact).
    pipeline.emit(note(subject="s" * 200 * KB))
    pipeline.run_until_idle()

    (quarantined,) = pipeline.quarantined
    assert quarantined.stage == "validate"
    assert quarantined.field == "subject"
    assert f"at most {MAX_SUBJECT_CHARS} characters" in quarantined.reason
    assert pipeline.published == []


def test_a_subject_at_its_bound_is_carried_on(pipeline: InMemoryPipeline) -> None:
    pipeline.emit(note(subject="s" * MAX_SUBJECT_CHARS))
    pipeline.run_until_idle()

    assert pipeline.quarantined == []
    assert {envelope.subject for envelope in pipeline.published} == {"s" * MAX_SUBJECT_CHARS}


def test_a_causation_id_over_the_id_bound_is_quarantined(pipeline: InMemoryPipeline) -> None:
    pipeline.emit(note(causation_id="c" * (MAX_ID_CHARS + 1)))
    pipeline.run_until_idle()

    (quarantined,) = pipeline.quarantined
    assert quarantined.field == "causation_id"


def test_a_payload_over_the_hard_maximum_is_quarantined_at_validate_with_its_size() -> None:
    pipeline = InMemoryPipeline([large_workflow.workflow])
    text = "t" * (MAX_PAYLOAD_BYTES + 1)
    pipeline.emit(note(text=text))
    pipeline.run_until_idle()

    (quarantined,) = pipeline.quarantined
    assert quarantined.stage == "validate"
    assert quarantined.field == "payload"
    assert f"over the {MAX_PAYLOAD_BYTES:,} a payload may have" in quarantined.reason
    assert pipeline.published == []


def test_the_payload_bound_counts_utf8_bytes_at_the_boundary() -> None:
    fits = (MAX_PAYLOAD_BYTES - json_bytes(NOTE_DEFAULTS)) // 2
    for chars, quarantined in ((fits, False), (fits + 1, True)):
        pipeline = InMemoryPipeline([large_workflow.workflow])
        pipeline.emit(note(text="é" * chars))
        pipeline.run_until_idle()
        at_validate = [q for q in pipeline.quarantined if q.stage == "validate"]
        assert bool(at_validate) is quarantined, chars


def test_a_producer_payload_shaped_as_a_claim_check_is_never_fetched(pipeline: InMemoryPipeline) -> None:
    # The attack: a producer names an object (another tenant's, say) as its own payload.
    secret = json.dumps({"note_id": "theirs", "text": "secret"}).encode()
    sha = hashlib.sha256(secret).hexdigest()
    pipeline.claims.objects[f"other/{sha}"] = secret
    event = note()
    event["payload"] = {CLAIM_FIELD: {"key": f"other/{sha}", "sha256": sha, "bytes": len(secret)}}
    pipeline.emit(event)
    pipeline.run_until_idle()

    (quarantined,) = pipeline.quarantined
    assert quarantined.stage == "validate"
    assert quarantined.field is not None
    assert quarantined.field.startswith("payload.")
    assert pipeline.published == []


# ------------------------------------------------------------------ an agent's and a tool's output


def test_an_agents_rationale_and_evidence_at_their_bounds_are_published() -> None:
    pipeline = InMemoryPipeline([large_workflow.workflow])
    pipeline.emit(note(payload={"loud": True}))
    pipeline.run_until_idle()

    assert pipeline.quarantined == []
    (run,) = pipeline.runs(TENANT)
    assert run.status is Status.COMPLETED


def test_an_agent_over_its_rationale_and_evidence_bounds_is_quarantined_at_decide() -> None:
    from intentbus.definition import Decision
    from intentbus.limits import MAX_EVIDENCE_BYTES, MAX_RATIONALE_CHARS
    from intentbus.stages.decide import _oversized

    decision = Decision(
        agent="scribe",
        rationale="r" * (MAX_RATIONALE_CHARS + 1),
        evidence={"said": "e" * MAX_EVIDENCE_BYTES},
        confidence=1.0,
        commands=(
            large_workflow_command("x" * (MAX_PAYLOAD_BYTES + 1)),
            large_workflow_command("y"),
        ),
    )
    problems = _oversized(decision, tuple(json_bytes(proposed.payload) for proposed in decision.commands))

    assert [problem.field for problem in problems] == [
        "decision.rationale",
        "decision.evidence",
        "decision.commands",
    ]
    assert "characters; at most 4,000" in problems[0].reason


def large_workflow_command(text: str) -> Any:
    from intentbus.definition import ProposedCommand

    return ProposedCommand(type="store_note", payload={"note_id": "n", "text": text})


def test_a_decision_whose_proposals_together_are_too_large_is_refused() -> None:
    from intentbus.definition import Decision
    from intentbus.stages.decide import _oversized

    decision = Decision(
        agent="scribe",
        rationale="r",
        confidence=1.0,
        commands=tuple(large_workflow_command("z" * 80 * KB) for _ in range(3)),
    )
    (problem,) = _oversized(decision, tuple(json_bytes(proposed.payload) for proposed in decision.commands))

    assert "3 proposals" in problem.reason
    assert "at most 229,376" in problem.reason


def test_an_oversized_scripted_decision_ends_in_quarantine_with_the_reason() -> None:
    pipeline = InMemoryPipeline([large_workflow.workflow])
    pipeline.emit(note(payload={"pad_rationale": 10_000}))
    pipeline.run_until_idle()

    (quarantined,) = pipeline.quarantined
    assert quarantined.stage == "decide"
    assert "the rationale has 10,000 characters; at most 4,000" in quarantined.reason
    assert not any(envelope.type == facts.COMMAND_PROPOSED for envelope in pipeline.published)


def test_a_tool_result_over_its_bound_is_published_as_its_size_and_digest() -> None:
    pipeline = InMemoryPipeline([large_workflow.workflow])
    text = "t" * (MAX_RESULT_BYTES + 10)
    pipeline.emit(note(text=text, payload={"echo": True}))
    pipeline.run_until_idle()

    (executed,) = [
        facts.CommandExecuted.model_validate(check_out(envelope, pipeline.claims).payload)
        for envelope in pipeline.published
        if envelope.type == facts.COMMAND_EXECUTED
    ]
    assert set(executed.result) == {"result_omitted", "result_bytes", "result_sha256"}
    assert executed.result["result_bytes"] > MAX_RESULT_BYTES
    (run,) = pipeline.runs(TENANT)
    assert run.status is Status.COMPLETED, "the tool ran: the run goes on, told the result was too large"


def test_bounded_result_keeps_a_result_at_its_bound() -> None:
    result = {"text": "t" * (MAX_RESULT_BYTES - 11)}
    assert json_bytes(result) == MAX_RESULT_BYTES
    assert bounded_result(result) is result


def test_an_error_told_in_a_fact_is_cut_with_what_was_cut() -> None:
    told = cut("e" * 5000)
    assert len(told) == 2000
    assert told.endswith("(3000 more characters cut)")
    assert cut("short") == "short"


# ------------------------------------------------------------------ sizes as AWS counts them


def test_entry_size_counts_time_source_detail_type_detail_and_resources() -> None:
    entry = {"Source": "é", "DetailType": "T", "Detail": "{}", "Resources": ["r1"], "Time": datetime.now(UTC)}
    assert entry_size(entry) == 14 + 2 + 1 + 2 + 2
    assert entry_size({**entry, "Time": None, "TraceHeader": "x" * 100}) == 7


def test_published_size_is_the_entry_size_of_what_the_bus_sends() -> None:
    envelope = sample_envelope(payload={"text": "ü" * 1000})
    assert published_size(envelope) == entry_size(to_entry(envelope, "bus"))


@pytest.mark.parametrize(
    "payload",
    [{}, {"claim_check": {}}, {"claim_check": {}, "other": 1}, {"other": 1}, {"claim_checks": {}}],
)
def test_only_a_payload_of_the_claim_check_alone_is_read_as_a_reference(payload: dict[str, Any]) -> None:
    reference = {"key": f"{TENANT}/{'0' * 64}", "sha256": "0" * 64, "bytes": 2}
    given = {name: reference if name == "claim_check" else value for name, value in payload.items()}
    found = reference_of(sample_envelope(payload=given))
    assert (found is not None) is (set(given) == {"claim_check"})


def test_the_threshold_setting_is_held_within_its_bounds() -> None:
    assert claim_check_threshold({}) == DEFAULT_CLAIM_CHECK_BYTES
    assert claim_check_threshold({"INTENTBUS_CLAIM_CHECK_BYTES": "10"}) == 1024
    assert claim_check_threshold({"INTENTBUS_CLAIM_CHECK_BYTES": str(10**9)}) == MAX_CLAIM_CHECK_BYTES
    assert claim_check_threshold({"INTENTBUS_CLAIM_CHECK_BYTES": "many"}) == DEFAULT_CLAIM_CHECK_BYTES


def sample_envelope(**fields: Any) -> Envelope:
    base: dict[str, Any] = {
        "id": "e-1",
        "source": facts.PIPELINE_SOURCE,
        "type": facts.EVENT_ACCEPTED,
        "time": datetime(2026, 12, 4, tzinfo=UTC),
        "kind": Kind.EVENT,
        "tenant_id": TENANT,
        "trace_id": "tr",
        "run_id": "run",
        "step_index": 0,
        "correlation_id": "run",
        "payload": {},
    }
    return Envelope.model_validate({**base, **fields})


def test_a_claim_checked_envelope_with_every_field_at_its_worst_fits_one_entry() -> None:
    """The bound the claim check rests on: whatever a producer puts in the envelope's own fields, the
    envelope without its payload is far inside 256 KB. JSON escapes count: a control character is six
    bytes (``\\u0001``), an astral one twelve."""
    worst = "\U0001f600"  # 12 bytes once escaped as a surrogate pair
    envelope = sample_envelope(
        id=worst * MAX_ID_CHARS,
        source="s" * 256,
        type="T" + "t" * 127,
        subject=worst * MAX_SUBJECT_CHARS,
        trace_id="t" * 128,
        run_id="r" * 128,
        idempotency_key="i" * 128,
        causation_id=worst * MAX_ID_CHARS,
        correlation_id="c" * 128,
        datacontenttype="a" * 256,
        dataschema="d" * MAX_SCHEMA_URI_CHARS,
        traceparent="0" * 256,
        tracestate="\x01" * MAX_TRACESTATE_CHARS,
        extensions={"worst": "\x01" * ((MAX_EXTENSIONS_BYTES - 20) // 6)},
        payload={"text": "p" * 300 * KB},
    )
    claims = InMemoryClaims()

    fitted = fit(envelope, claims, MAX_CLAIM_CHECK_BYTES)

    assert reference_of(fitted) is not None
    # A fact is published whole while its entry is within the threshold, else claim-checked: the
    # largest entry is the larger of the threshold and the worst claim-checked envelope.
    assert published_size(fitted) < 64 * KB
    assert MAX_CLAIM_CHECK_BYTES < PUT_EVENTS_LIMIT_BYTES


def test_fit_refuses_to_publish_an_entry_aws_would_refuse() -> None:
    envelope = sample_envelope(payload={"text": "p" * 300 * KB})
    with pytest.raises(OversizedFact, match="over the 262,144 AWS accepts, and no claim-check bucket"):
        fit(envelope, None, DEFAULT_CLAIM_CHECK_BYTES)


def test_check_in_then_out_gives_back_the_same_envelope_and_the_same_object_twice() -> None:
    claims = InMemoryClaims()
    envelope = sample_envelope(payload={"text": "p" * 100 * KB, "n": 1.5})

    first, again = check_in(envelope, claims), check_in(envelope, claims)

    assert first == again
    assert len(claims.objects) == 1, "a redelivery publishes the same object"
    assert check_out(first, claims) == envelope


def test_a_swapped_object_is_malformed_and_a_missing_one_too() -> None:
    claims = InMemoryClaims()
    checked = check_in(sample_envelope(payload={"amount": 3}), claims)
    (key,) = claims.objects
    claims.objects[key] = json.dumps({"amount": 3000}).encode()

    with pytest.raises(MalformedInput, match="does not match its digest"):
        check_out(checked, claims)
    del claims.objects[key]
    with pytest.raises(MalformedInput, match="is missing"):
        check_out(checked, claims)


# ------------------------------------------------------------------ the pipeline with claim checks


def test_a_payload_over_the_threshold_completes_by_claim_check_with_every_entry_under_it() -> None:
    pipeline = InMemoryPipeline([large_workflow.workflow])
    pipeline.emit(note(text="t" * 150 * KB))
    pipeline.run_until_idle()

    (run,) = pipeline.runs(TENANT)
    assert run.status is Status.COMPLETED
    assert pipeline.quarantined == []
    claimed = [envelope for envelope in pipeline.published if reference_of(envelope) is not None]
    assert {envelope.type for envelope in claimed} >= {
        facts.EVENT_ACCEPTED,
        facts.COMMAND_PROPOSED,
        facts.COMMAND_AUTHORIZED,
        facts.COMMAND_EXECUTED,
    }
    assert pipeline.claims.objects
    assert largest_entry(pipeline) <= DEFAULT_CLAIM_CHECK_BYTES


def test_a_maximal_input_stays_under_the_limit_at_every_hop() -> None:
    """The largest message: every bounded field at its bound, the largest payload, the loudest agent."""
    pipeline = InMemoryPipeline([large_workflow.workflow])
    filler = MAX_PAYLOAD_BYTES - json_bytes({**NOTE_DEFAULTS, "loud": True})
    pipeline.emit(
        note(
            text="t" * filler,
            subject="s" * MAX_SUBJECT_CHARS,
            payload={"echo": False, "loud": True},
        )
    )
    pipeline.run_until_idle()

    (run,) = pipeline.runs(TENANT)
    assert run.status is Status.COMPLETED
    assert largest_entry(pipeline) <= DEFAULT_CLAIM_CHECK_BYTES


def test_a_swapped_object_is_quarantined_by_the_stage_that_reads_it() -> None:
    pipeline = InMemoryPipeline([large_workflow.workflow])
    event = note(text="t" * 100 * KB)
    pipeline.deliver("validate", producer_body(event, detail_type=large_workflow.FILED))
    (accepted,) = pipeline.published
    reference = reference_of(accepted)
    assert reference is not None
    # The attack: someone with write access to the bucket swaps the accepted event for another.
    forged = json.loads(pipeline.claims.objects[reference.key])
    forged["event"]["payload"]["text"] = "something else entirely"
    pipeline.claims.objects[reference.key] = json.dumps(forged).encode()

    pipeline.follow([accepted])

    (quarantined,) = pipeline.quarantined
    assert quarantined.stage == "decide"
    assert "does not match its digest" in quarantined.reason
    assert pipeline.tool_runs["store_note"] == 0


def test_a_swapped_object_behind_an_outcome_is_quarantined_by_decide() -> None:
    """A workflow's outcome goes from record straight to decide, which resolves its claim check: the
    attack is the object behind record's outcome swapped in the bucket before decide reads it."""
    pipeline = InMemoryPipeline([large_workflow.workflow], settings={"INTENTBUS_CLAIM_CHECK_BYTES": "8192"})
    body = producer_body(note(text="t" * 20 * KB, payload={"echo": True}), detail_type=large_workflow.FILED)
    pending = list(pipeline.deliver("validate", body).published)
    while pending[0].source != facts.WORKFLOW_SOURCE:
        envelope = pending.pop(0)
        stage = route(envelope)
        if stage is not None:
            pending.extend(pipeline.deliver(stage, bus_body(envelope)).published)
    (stored,) = [envelope for envelope in pipeline.published if envelope.type == large_workflow.STORED]
    reference = reference_of(stored)  # as the bus carries it
    assert reference is not None
    forged = json.loads(pipeline.claims.objects[reference.key])
    forged["text"] = "something else entirely"
    pipeline.claims.objects[reference.key] = json.dumps(forged).encode()

    result = pipeline.deliver("decide", bus_body(stored))

    assert result.outcome is Outcome.QUARANTINED
    (quarantined,) = pipeline.quarantined
    assert quarantined.stage == "decide"
    assert "does not match its digest" in quarantined.reason


def test_a_claim_checked_domain_event_is_resolved_by_decide_and_the_run_completes() -> None:
    pipeline = InMemoryPipeline([large_workflow.workflow], settings={"INTENTBUS_CLAIM_CHECK_BYTES": "8192"})
    pipeline.emit(note(text="t" * 20 * KB, payload={"echo": True}))
    pipeline.run_until_idle()

    (run,) = pipeline.runs(TENANT)
    assert run.status is Status.COMPLETED
    (stored,) = [envelope for envelope in pipeline.published if envelope.type == large_workflow.STORED]
    assert reference_of(stored) is not None
    assert check_out(stored, pipeline.claims).payload["text"] == "t" * 20 * KB
    assert largest_entry(pipeline) <= 8192
