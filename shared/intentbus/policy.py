"""Policy as data: which command may run, may run after approval, or may not run."""

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Effect(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    REQUIRE_APPROVAL = "require_approval"


class Limit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    min: float | None = None
    max: float | None = None


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


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    effect: Effect
    rule: str
    reason: str


class Policy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    rules: tuple[Rule, ...] = ()

    def evaluate(
        self, *, command: str, payload: Mapping[str, Any], tenant_id: str, environment: str
    ) -> Verdict:
        for rule in self.rules:
            if not _matches(rule, command, payload, tenant_id, environment):
                continue
            breach = _limit_breach(rule, payload)
            if breach is not None:
                return Verdict(effect=Effect.DENY, rule=rule.id, reason=breach)
            return Verdict(effect=rule.effect, rule=rule.id, reason=rule.reason or f"rule {rule.id}")
        return Verdict(
            effect=Effect.DENY,
            rule="default-deny",
            reason=f"no policy rule allows {command!r} for tenant {tenant_id!r} in {environment!r}",
        )


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
