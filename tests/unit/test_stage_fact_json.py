"""Decide's CommandProposed and authorize's CommandAuthorized and CommandDenied payloads, made from the
dumps of the validated models they hold, are what the facts' models dump: the same JSON text, key for
key and type for type; any other values are left to the models, as before. Authorize's check that a
step offers a command is its offer's."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intentbus import facts
from intentbus.definition import Decision, ProposedCommand, Step, TokenUsage, Workflow
from intentbus.envelope import Envelope, Kind
from intentbus.policy import Effect, Policy, Verdict
from intentbus.stages.authorize import authorized_json, denied_json, offers
from intentbus.stages.decide import proposed_json
from intentbus.workflows import direct_tool, incident
from intentbus_faults import fanout_workflow


def _same(made: dict[str, Any], dumped: dict[str, Any]) -> None:
    assert made == dumped
    assert json.dumps(made) == json.dumps(dumped)  # the same keys in the same order, at every depth
    assert _types(made) == _types(dumped)


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return [(key, _types(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_types(item) for item in value]
    return type(value).__name__


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_payloads = st.dictionaries(st.text(max_size=5), _json, max_size=4)
_optional_text = st.none() | st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)
_commands = st.builds(
    Envelope,
    id=st.text(min_size=1, max_size=10),
    source=st.sampled_from(["intentbus.pipeline", "crm.example"]),
    type=st.sampled_from(["scale_service", "collect_diagnostics", "charge"]),
    time=st.datetimes(timezones=st.just(UTC)),
    subject=_optional_text,
    kind=st.just(Kind.COMMAND),
    tenant_id=st.sampled_from(["acme", "org_enterprise_alpha"]),
    trace_id=st.just("tr_1"),
    run_id=st.just("run-1"),
    step_index=st.integers(0, 5),
    idempotency_key=st.none() | st.just("idem_1"),
    causation_id=st.none() | st.just("cause"),
    correlation_id=st.just("run-1"),
    depth=st.integers(0, 3),
    version=st.integers(0, 3),
    payload=_payloads,
    traceparent=st.none() | st.just("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
    tracestate=_optional_text,
    extensions=st.just({}) | st.just({"region": "eu"}),
)
_verdicts = st.builds(
    Verdict, effect=st.sampled_from(list(Effect)), rule=st.text(max_size=8), reason=st.text(max_size=20)
)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(_commands, _verdicts, st.none() | st.integers(0, 2**40))
def test_an_authorized_commands_payload_is_what_its_model_dumps(
    command: Envelope, verdict: Verdict, resource_version: int | None
) -> None:
    dumped = facts.CommandAuthorized(
        command=command, verdict=verdict, resource_version=resource_version
    ).model_dump(mode="json")
    _same(authorized_json(command, verdict, resource_version), dumped)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(_commands, _verdicts)
def test_a_denied_commands_payload_is_what_its_model_dumps(command: Envelope, verdict: Verdict) -> None:
    dumped = facts.CommandDenied(command=command, verdict=verdict).model_dump(mode="json")
    _same(denied_json(command, verdict), dumped)


class _Wider(Envelope):
    note: str = "a field the fact's command does not have"


def test_values_of_other_types_are_left_to_the_models() -> None:
    plain = _Wider(**_command().model_dump())
    verdict = Verdict(effect=Effect.ALLOW, rule="r", reason="why")
    made = authorized_json(plain, verdict, None)
    assert "note" not in made["command"]
    _same(made, facts.CommandAuthorized(command=plain, verdict=verdict).model_dump(mode="json"))
    _same(
        denied_json(plain, verdict),
        facts.CommandDenied(command=plain, verdict=verdict).model_dump(mode="json"),
    )
    loose: Any = True  # a resource version pydantic reads as 1
    _same(
        authorized_json(_command(), verdict, loose),
        facts.CommandAuthorized(command=_command(), verdict=verdict, resource_version=loose).model_dump(
            mode="json"
        ),
    )


def _command() -> Envelope:
    return Envelope(
        id="cmd-1",
        source="intentbus.pipeline",
        type="charge",
        time=datetime(2026, 12, 6, tzinfo=UTC),
        kind=Kind.COMMAND,
        tenant_id="acme",
        trace_id="t",
        run_id="run-1",
        step_index=1,
        correlation_id="run-1",
        payload={"invoice": "inv-1"},
    )


_evidence_values = (
    _json | st.datetimes().map(lambda moment: moment.replace(tzinfo=UTC)) | st.just(timedelta(1))
)
_decisions = st.builds(
    Decision,
    agent=st.text(min_size=1, max_size=8),
    commands=st.lists(
        st.builds(ProposedCommand, type=st.just("charge"), payload=_payloads), min_size=1, max_size=2
    ).map(tuple),
    rationale=st.text(max_size=20),
    evidence=st.dictionaries(st.text(max_size=4), _evidence_values, max_size=3),
    confidence=st.floats(0.0, 1.0) | st.sampled_from([0, 1]),
    tokens=st.builds(TokenUsage, input_tokens=st.integers(0, 99), output_tokens=st.integers(0, 99)),
)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(_commands, st.text(min_size=1, max_size=8), _decisions)
def test_a_proposed_commands_payload_is_what_its_model_dumps(
    command: Envelope, decision_id: str, decision: Decision
) -> None:
    dumped = facts.CommandProposed(
        command=command,
        decision_id=decision_id,
        agent=decision.agent,
        rationale=decision.rationale,
        evidence=decision.evidence,
        confidence=decision.confidence,
    ).model_dump(mode="json")
    _same(proposed_json(command, decision_id, decision, decision.model_dump(mode="json")), dumped)


def test_a_decision_not_validated_is_left_to_the_model() -> None:
    made: Any = Decision.model_construct(
        agent="a",
        commands=(ProposedCommand(type="charge", payload={}),),
        rationale="why",
        evidence={},
        confidence=1,  # an int: the fact's model makes it 1.0
    )
    payload = proposed_json(_command(), "d", made, made.model_dump(mode="json"))
    assert type(payload["confidence"]) is float
    expected = facts.CommandProposed(
        command=_command(), decision_id="d", agent="a", rationale="why", evidence={}, confidence=1
    ).model_dump(mode="json")
    _same(payload, expected)


def test_a_step_offers_what_its_offer_holds() -> None:
    for workflow in (incident.workflow, direct_tool.workflow, fanout_workflow.workflow, _tools_undeclared()):
        names = {*workflow.commands, *workflow.events, "undeclared", ""}
        for step in workflow.steps.values():
            names.update(step.tools or ())
            for name in sorted(names):
                assert offers(workflow, step, name) is (name in workflow.offered(step)), (step.on, name)


def _tools_undeclared() -> Workflow:
    """A workflow whose step names a tool it does not declare (the catalog refuses it; the check holds)."""
    workflow = Workflow(name="w", version="1", policy=Policy())
    workflow.commands["charge"] = workflow.commands["refund"] = incident.workflow.commands["scale_service"]
    workflow.step(Step(on="e", agent=None, outcome="o", tools=("charge", "undeclared")))
    workflow.step(Step(on="f", agent=None, outcome="o"))
    return workflow
