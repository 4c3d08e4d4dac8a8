"""A policy evaluates only the rules that may match a command (indexed once per policy) and reuses a
matched rule's verdict: every verdict is the one the plain first-match scan over all its rules gives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intentbus import policy as policy_module
from intentbus.policy import Effect, Limit, Policy, Rule, Verdict
from intentbus.workflows import direct_tool, incident
from intentbus_faults import fanout_workflow


def _scanned(
    policy: Policy, *, command: str, payload: Mapping[str, Any], tenant_id: str, environment: str
) -> Verdict:
    """The verdict as the policy gave it before the index: every rule, in order, first match wins."""
    for rule in policy.rules:
        if not policy_module._matches(rule, command, payload, tenant_id, environment):
            continue
        breach = policy_module._limit_breach(rule, payload)
        if breach is not None:
            return Verdict(effect=Effect.DENY, rule=rule.id, reason=breach)
        return Verdict(effect=rule.effect, rule=rule.id, reason=rule.reason or f"rule {rule.id}")
    return Verdict(
        effect=Effect.DENY,
        rule="default-deny",
        reason=f"no policy rule allows {command!r} for tenant {tenant_id!r} in {environment!r}",
    )


def _same_verdicts(
    policy: Policy, command: str, payload: dict[str, Any], tenant_id: str, environment: str
) -> None:
    asked: dict[str, Any] = {
        "command": command,
        "payload": payload,
        "tenant_id": tenant_id,
        "environment": environment,
    }
    verdict = policy.evaluate(**asked)
    expected = _scanned(policy, **asked)
    assert verdict == expected
    assert verdict.model_dump_json() == expected.model_dump_json()
    assert type(verdict.effect) is Effect


_names = st.sampled_from(["a", "b", "c", "*", "scale_service", "collect_diagnostics", "check_dependencies"])
_few = st.sampled_from(["x", "y", "dev", "production", "acme"])
_numbers = st.integers(-5, 30) | st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=30)
_rules = st.builds(
    Rule,
    id=st.sampled_from(["r1", "r2", "r3", "same"]),
    command=_names,
    effect=st.sampled_from(list(Effect)),
    tenants=st.none() | st.tuples(_few),
    environments=st.none() | st.tuples(_few) | st.tuples(_few, _few),
    where=st.dictionaries(st.sampled_from(["k", "n.m"]), st.tuples(_few), max_size=1),
    limits=st.dictionaries(
        st.sampled_from(["desired_count", "n.m"]),
        st.builds(Limit, min=st.none() | st.just(1.0), max=st.none() | st.just(20.0)),
        max_size=1,
    ),
    reason=st.sampled_from(["", "why"]),
)
_payloads = st.fixed_dictionaries(
    {},
    optional={
        "k": _few | _numbers,
        "n": st.fixed_dictionaries({}, optional={"m": _few | _numbers | st.booleans()}),
        "desired_count": _numbers | st.booleans() | _few,
        "quantity": _numbers,
        "channel": st.sampled_from(["web", "partner", "other"]),
        "tool_name": st.sampled_from(["crm_record_upsert", "other"]),
    },
)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(
    st.lists(_rules, max_size=6).map(tuple),
    st.lists(st.tuples(_names, _payloads, _few, _few), min_size=1, max_size=4),
)
def test_a_policy_gives_the_verdict_of_its_first_matching_rule(
    rules: tuple[Rule, ...], asked: list[tuple[str, dict[str, Any], str, str]]
) -> None:
    policy = Policy(rules=rules)
    for command, payload, tenant_id, environment in asked:  # the index made once, then reused
        _same_verdicts(policy, command, payload, tenant_id, environment)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(
    st.sampled_from([incident.POLICY, direct_tool.workflow.policy, fanout_workflow.workflow.policy]),
    st.sampled_from(
        [
            "collect_diagnostics",
            "check_dependencies",
            "plan_recovery",
            "scale_service",
            direct_tool.REQUESTED,
            fanout_workflow.COMMAND,
            fanout_workflow.UNCHECKED,
            "*",
            "other",
        ]
    ),
    _payloads,
    st.sampled_from(["acme", "org_enterprise_alpha", "globex", "other"]),
    st.sampled_from(["dev", "staging", "production", "other"]),
)
def test_the_workflows_policies_give_the_verdicts_they_gave(
    policy: Policy, command: str, payload: dict[str, Any], tenant_id: str, environment: str
) -> None:
    _same_verdicts(policy, command, payload, tenant_id, environment)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(
    st.lists(_rules, max_size=6).map(tuple),
    _names,
    _few,
    _few,
    st.lists(_payloads, min_size=2, max_size=5),
)
def test_a_kept_verdict_is_the_one_every_payload_gets(
    rules: tuple[Rule, ...], command: str, tenant_id: str, environment: str, payloads: list[dict[str, Any]]
) -> None:
    """The same command, tenant and environment with other payloads: a verdict kept for the first is
    given again only where no payload could change it."""
    policy = Policy(rules=rules)
    for payload in payloads:
        _same_verdicts(policy, command, payload, tenant_id, environment)


def test_a_verdict_that_reads_the_payload_is_not_kept() -> None:
    limited = Rule(id="limited", command="c", effect=Effect.ALLOW, limits={"n": Limit(max=5)})
    where = Rule(id="where", command="c", effect=Effect.ALLOW, where={"k": ("x",)})
    plain = Rule(id="plain", command="c", effect=Effect.REQUIRE_APPROVAL)
    asked: dict[str, Any] = {"command": "c", "tenant_id": "t", "environment": "dev"}
    first = Policy(rules=(limited, plain))
    assert first.evaluate(payload={"n": 1}, **asked).effect is Effect.ALLOW
    assert first.evaluate(payload={"n": 9}, **asked).effect is Effect.DENY
    second = Policy(rules=(where, plain))
    assert second.evaluate(payload={"k": "y"}, **asked).rule == "plain"  # passed ``where`` on the payload
    assert second.evaluate(payload={"k": "x"}, **asked).rule == "where"
    third = Policy(rules=(plain, where))
    assert third.evaluate(payload={}, **asked).rule == "plain"
    assert policy_module._index_of(third).verdicts == {("c", "t", "dev"): third.evaluate(payload={}, **asked)}
    assert policy_module._index_of(first).verdicts == {}
    assert policy_module._index_of(second).verdicts == {}


def test_the_verdicts_kept_stay_bounded() -> None:
    policy = Policy(rules=(Rule(id="allow", command="c", effect=Effect.ALLOW),))
    for n in range(policy_module._VERDICTS_KEPT + 10):
        policy.evaluate(command="c", payload={}, tenant_id=f"t{n}", environment="dev")
    assert 0 < len(policy_module._index_of(policy).verdicts) <= policy_module._VERDICTS_KEPT


def test_an_index_serves_only_its_own_policy() -> None:
    allow = Rule(id="allow", command="c", effect=Effect.ALLOW)
    deny = Rule(id="deny", command="c", effect=Effect.DENY)
    first = Policy(rules=(allow,))
    asked: dict[str, Any] = {"command": "c", "payload": {}, "tenant_id": "t", "environment": "dev"}
    assert first.evaluate(**asked).effect is Effect.ALLOW
    # A copy with other rules is another policy, whatever the index holds for the first.
    assert first.model_copy(update={"rules": (deny,)}).evaluate(**asked).effect is Effect.DENY
    # So is a policy made where a dropped one was (the same ``id``), here played by swapping its rules.
    object.__setattr__(first, "__dict__", {**first.__dict__, "rules": (deny, allow)})
    assert first.evaluate(**asked).rule == "deny"


def test_the_indexes_kept_stay_bounded() -> None:
    policies = [Policy(rules=(Rule(id=str(n), command="c", effect=Effect.ALLOW),)) for n in range(200)]
    for policy in policies:
        policy.evaluate(command="c", payload={}, tenant_id="t", environment="dev")
    assert len(policy_module._INDEXES) <= policy_module._INDEXES_KEPT
