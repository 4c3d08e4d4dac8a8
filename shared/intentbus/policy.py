"""Policy as data: which command may run, may run after approval, or may not run.

A workflow module makes its ``Policy`` at import, in every stage, though only authorize evaluates it.
Made from plain values (exact ``str``, ``Effect``, tuples of ``str``, ``int`` or ``float`` bounds, the
models themselves), each model is filled as its validator would fill it without building that validator
(some 5 M instructions of a cold start); any other input is validated by pydantic as before.
"""

from collections.abc import Mapping
from enum import StrEnum
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field


class Effect(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    REQUIRE_APPROVAL = "require_approval"


class Limit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    min: float | None = None
    max: float | None = None

    if not TYPE_CHECKING:  # the plugin's signature stays the one type checkers see

        def __init__(self, /, **data: Any) -> None:
            _fill(self, data, _plain_limit(data))


class Rule(BaseModel):
    """Matches a command by type, tenant, environment and payload values; first match wins."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    command: str
    effect: Effect
    tenants: tuple[str, ...] | None = None
    environments: tuple[str, ...] | None = None
    where: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Payload field (dotted path) -> accepted values."""
    limits: dict[str, Limit] = Field(default_factory=dict)
    """Numeric payload field (dotted path) -> bounds; a value outside them denies the command."""
    reason: str = ""

    if not TYPE_CHECKING:

        def __init__(self, /, **data: Any) -> None:
            _fill(self, data, _plain_rule(data))


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    effect: Effect
    rule: str
    reason: str


class Policy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    rules: tuple[Rule, ...] = ()

    if not TYPE_CHECKING:

        def __init__(self, /, **data: Any) -> None:
            _fill(self, data, _plain_policy(data))

    def evaluate(
        self, *, command: str, payload: Mapping[str, Any], tenant_id: str, environment: str
    ) -> Verdict:
        index = _index_of(self)
        asked = (command, tenant_id, environment)
        known = index.verdicts.get(asked)
        if known is not None:
            return known
        payload_free = True  # no rule passed so far read the payload: nor does the verdict, then
        found = index.by_command.get(command)
        for rule in index.any_command if found is None else found:
            if not _matches(rule, command, payload, tenant_id, environment):
                payload_free = payload_free and not rule.where
                continue
            breach = _limit_breach(rule, payload)
            if breach is not None:
                return Verdict(effect=Effect.DENY, rule=rule.id, reason=breach)
            verdict = _rule_verdict(rule.effect, rule.id, rule.reason or f"rule {rule.id}")
            if payload_free and not rule.where and not rule.limits:
                index.keep(asked, verdict)
            return verdict
        verdict = Verdict(
            effect=Effect.DENY,
            rule="default-deny",
            reason=f"no policy rule allows {command!r} for tenant {tenant_id!r} in {environment!r}",
        )
        if payload_free:
            index.keep(asked, verdict)
        return verdict


class _Index:
    """A policy's rules by command type (the ``*`` ones among them, in order), its ``*`` rules alone (for a
    command no rule names), and the verdicts no payload can change, by (command, tenant, environment)."""

    __slots__ = ("any_command", "by_command", "policy", "rules", "verdicts")

    def __init__(self, policy: Policy) -> None:
        rules = policy.rules
        named = {rule.command for rule in rules}
        self.policy = policy
        self.rules = rules  # the very tuple the index was made for
        self.by_command = {
            name: tuple(rule for rule in rules if rule.command in (name, "*")) for name in named
        }
        self.any_command = tuple(rule for rule in rules if rule.command == "*")
        self.verdicts: dict[tuple[str, str, str], Verdict] = {}

    def keep(self, asked: tuple[str, str, str], verdict: Verdict) -> None:
        if len(self.verdicts) >= _VERDICTS_KEPT:  # tenants are many: a bounded few are kept
            self.verdicts.clear()
        self.verdicts[asked] = verdict


_INDEXES: dict[int, _Index] = {}
_INDEXES_KEPT = 64
_VERDICTS_KEPT = 1024


def _index_of(policy: Policy) -> _Index:
    """The policy's index, made once: a deployment has a few policies, fixed. A rule that does not name
    the command (nor ``*``) cannot match it (``_matches``), and the verdict of a scan that read no
    payload field (no ``where`` among the rules it passed or matched, no ``limits`` on the match) is
    the same for every payload, so it is kept.

    Keyed by the policy's identity and checked against it and its very rules tuple, so an index never
    serves another policy (a new one at a reused address, or a copy with other rules)."""
    index = _INDEXES.get(id(policy))
    if index is None or index.policy is not policy or index.rules is not policy.rules:
        if len(_INDEXES) >= _INDEXES_KEPT:
            _INDEXES.clear()
        index = _Index(policy)
        _INDEXES[id(policy)] = index
    return index


@lru_cache(maxsize=256)
def _rule_verdict(effect: Effect, rule: str, reason: str) -> Verdict:
    """A matched rule's verdict: the same for every command it matches, and immutable, so made once."""
    return Verdict(effect=effect, rule=rule, reason=reason)


def _lookup(payload: Mapping[str, Any], path: str) -> Any:
    value: Any = payload
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _matches(rule: Rule, command: str, payload: Mapping[str, Any], tenant_id: str, environment: str) -> bool:
    if rule.command not in (command, "*"):
        return False
    if rule.tenants is not None and tenant_id not in rule.tenants:
        return False
    if rule.environments is not None and environment not in rule.environments:
        return False
    return all(str(_lookup(payload, path)) in accepted for path, accepted in rule.where.items())


def _limit_breach(rule: Rule, payload: Mapping[str, Any]) -> str | None:
    for path, limit in rule.limits.items():
        value = _lookup(payload, path)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{path} must be a number for rule {rule.id}"
        if limit.min is not None and value < limit.min:
            return f"{path}={value} is below the minimum {limit.min:g} of rule {rule.id}"
        if limit.max is not None and value > limit.max:
            return f"{path}={value} is above the maximum {limit.max:g} of rule {rule.id}"
    return None


def _fill(model: BaseModel, data: dict[str, Any], plain: dict[str, Any] | None) -> None:
    """``model`` as validating ``data`` makes it; ``plain``: the values validation would give, if sure."""
    if plain is None:
        BaseModel.__init__(model, **data)
        return
    made = type(model).model_construct(**plain)
    for name in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"):
        object.__setattr__(model, name, getattr(made, name))


def _strings(value: Any) -> bool:
    return type(value) is tuple and all(type(item) is str for item in value)


_UNSURE = object()


def _bound(value: Any) -> Any:
    """The bound as validated (an ``int`` read as the ``float`` it equals), ``_UNSURE`` if unsure."""
    if value is None or type(value) is float:
        return value
    if type(value) is int and -(2**53) <= value <= 2**53:
        return float(value)
    return _UNSURE


def _plain_limit(data: dict[str, Any]) -> dict[str, Any] | None:
    if not data.keys() <= {"min", "max"}:
        return None
    plain = {name: _bound(value) for name, value in data.items()}
    return None if _UNSURE in plain.values() else plain


_RULE_STRINGS = ("id", "command", "reason")
_RULE_FIELDS = frozenset({*_RULE_STRINGS, "effect", "tenants", "environments", "where", "limits"})


def _plain_rule(data: dict[str, Any]) -> dict[str, Any] | None:
    if not (data.keys() <= _RULE_FIELDS and {"id", "command", "effect"} <= data.keys()):
        return None
    plain = dict(data)
    for name, value in data.items():
        if name in _RULE_STRINGS:
            sure = type(value) is str
        elif name == "effect":
            sure = type(value) is Effect
        elif name in ("tenants", "environments"):
            sure = value is None or _strings(value)
        elif name == "where":
            sure = type(value) is dict and all(type(k) is str and _strings(v) for k, v in value.items())
            plain[name] = dict(value) if sure else None
        else:  # limits
            sure = type(value) is dict and all(type(k) is str and type(v) is Limit for k, v in value.items())
            plain[name] = dict(value) if sure else None
        if not sure:
            return None
    return plain


def _plain_policy(data: dict[str, Any]) -> dict[str, Any] | None:
    if not data.keys() <= {"rules"}:
        return None
    rules = data.get("rules", ())
    if type(rules) is not tuple or not all(type(rule) is Rule for rule in rules):
        return None
    return dict(data)
