"""A small IAM policy evaluator, enough to test what template.yaml's policies allow and refuse.

Same-account evaluation, as AWS documents it: an explicit Deny in any policy (identity or resource)
wins; otherwise an Allow in an identity policy, or a resource policy Allow naming the principal
itself, allows; otherwise the request is implicitly denied. Supported: ``Action`` / ``NotAction``
(wildcards, case-insensitive), ``Resource`` / ``NotResource`` (wildcards), ``Principal`` in resource
policies (``*``, an ARN, an account or its root, a service such as ``events.amazonaws.com``: a request
whose principal is that service name), and the condition operators StringEquals,
StringNotEquals, StringLike, StringNotLike, ArnEquals, ArnLike, ArnNotEquals, ArnNotLike and Null on
single-valued keys, and ``${aws:PrincipalTag/...}`` variables in ``Resource`` (a tag the principal
lacks matches nothing, as in IAM). Anything else (another operator, ``...IfExists``,
``ForAnyValue:``) raises, so an unsupported policy fails a test instead of being misread.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

Policy = Mapping[str, Any]
"""A policy document: ``{"Version": ..., "Statement": [...]}`` (or one statement object)."""


class Decision(enum.Enum):
    ALLOW = "allow"
    EXPLICIT_DENY = "explicit deny"
    IMPLICIT_DENY = "implicit deny"


@dataclass(frozen=True)
class Request:
    principal_arn: str
    """The calling role's ARN (for an assumed role, ``aws:PrincipalArn`` is the role's)."""
    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)
    """Request condition keys, e.g. ``{"events:source": "monitoring.example"}``."""

    def value(self, key: str) -> str | None:
        keys = {"aws:principalarn": self.principal_arn} | {k.lower(): v for k, v in self.context.items()}
        return keys.get(key.lower())

    @property
    def account(self) -> str:
        """The principal's account; a service principal (no ARN) has none."""
        parts = self.principal_arn.split(":")
        return parts[4] if len(parts) > 4 else ""


def evaluate(request: Request, identity: Sequence[Policy], resource: Sequence[Policy] = ()) -> Decision:
    matching = [(s, False) for p in identity for s in statements(p) if _applies(s, request, False)]
    matching += [(s, True) for p in resource for s in statements(p) if _applies(s, request, True)]
    if any(s["Effect"] == "Deny" for s, _ in matching):
        return Decision.EXPLICIT_DENY
    for statement, in_resource_policy in matching:
        if statement["Effect"] == "Allow" and (
            not in_resource_policy or _names_principal_itself(statement, request)
        ):
            return Decision.ALLOW
    return Decision.IMPLICIT_DENY


def statements(policy: Policy) -> list[Mapping[str, Any]]:
    found = policy.get("Statement", policy)
    return list(found) if isinstance(found, list) else [found]


# ------------------------------------------------------------------------------ matching one statement


def _applies(statement: Mapping[str, Any], request: Request, in_resource_policy: bool) -> bool:
    if statement.get("Effect") not in ("Allow", "Deny"):
        raise ValueError(f"a statement without a valid Effect: {statement}")
    if in_resource_policy and not _principal_matches(statement, request):
        return False
    return (
        _listed(statement, "Action", request.action, case_sensitive=False)
        and _listed(_variables(statement, request), "Resource", request.resource, case_sensitive=True)
        and _conditions_hold(statement.get("Condition", {}), request)
    )


_VARIABLE = re.compile(r"\$\{(aws:PrincipalTag/[^}]+)\}")


def _variables(statement: Mapping[str, Any], request: Request) -> Mapping[str, Any]:
    """The statement with its principal-tag variables replaced; a resource naming a missing tag is dropped."""
    if "Resource" not in statement:
        return statement
    resolved: list[str] = []
    for resource in _strings(statement["Resource"]):
        keys = _VARIABLE.findall(resource)
        if all(request.value(key) is not None for key in keys):
            resolved.append(_VARIABLE.sub(lambda match: str(request.value(match.group(1))), resource))
    return {**statement, "Resource": resolved}


def _listed(statement: Mapping[str, Any], name: str, value: str, *, case_sensitive: bool) -> bool:
    if name in statement and f"Not{name}" in statement:
        raise ValueError(f"a statement with both {name} and Not{name}: {statement}")
    if name in statement:
        return any(_glob(p, case_sensitive)(value) for p in _strings(statement[name]))
    if f"Not{name}" in statement:
        return not any(_glob(p, case_sensitive)(value) for p in _strings(statement[f"Not{name}"]))
    raise ValueError(f"a statement without {name}: {statement}")


def _principal_matches(statement: Mapping[str, Any], request: Request) -> bool:
    principal = statement.get("Principal")
    if principal is None:
        raise ValueError(f"a resource policy statement without Principal: {statement}")
    if principal == "*":
        return True
    if not isinstance(principal, Mapping):
        return False
    if request.principal_arn in _strings(principal.get("Service", [])):
        return True
    names = _strings(principal.get("AWS", []))
    return bool(request.account) and any(
        name in ("*", request.principal_arn, request.account)
        or name == f"arn:aws:iam::{request.account}:root"
        for name in names
    )


def _names_principal_itself(statement: Mapping[str, Any], request: Request) -> bool:
    """A resource policy Allow grants by itself only to the principal it names (or ``*``, or the service
    it names: a service has no identity policies); naming the account (its root) leaves the decision to
    the principal's identity policies."""
    principal = statement["Principal"]
    if principal == "*":
        return True
    return request.principal_arn in _strings(principal.get("AWS", [])) + _strings(
        principal.get("Service", [])
    )


# ------------------------------------------------------------------------------ conditions


def _conditions_hold(conditions: Mapping[str, Mapping[str, Any]], request: Request) -> bool:
    for operator, keys in conditions.items():
        test = _OPERATORS.get(operator)
        if test is None:
            raise ValueError(f"condition operator {operator} is not supported by tests/iam_eval.py")
        for key, wanted in keys.items():
            if not test(request.value(key), _strings(wanted)):
                return False
    return True


def _positive(match: Callable[[str, str], bool]) -> Callable[[str | None, list[str]], bool]:
    return lambda value, wanted: value is not None and any(match(w, value) for w in wanted)


def _negated(match: Callable[[str, str], bool]) -> Callable[[str | None, list[str]], bool]:
    # A negated operator holds when the key is absent from the request (AWS's documented behaviour).
    return lambda value, wanted: value is None or not any(match(w, value) for w in wanted)


def _string_equals(wanted: str, value: str) -> bool:
    return wanted == value


def _string_like(wanted: str, value: str) -> bool:
    return _glob(wanted, True)(value)


def _arn_like(wanted: str, value: str) -> bool:
    """ArnEquals and ArnLike both compare the six ``:``-separated parts, each with wildcards."""
    pattern, actual = wanted.split(":", 5), value.split(":", 5)
    if len(pattern) != 6 or len(actual) != 6:
        return False
    return all(_glob(p, True)(a) for p, a in zip(pattern, actual, strict=True))


_OPERATORS: dict[str, Callable[[str | None, list[str]], bool]] = {
    "StringEquals": _positive(_string_equals),
    "StringNotEquals": _negated(_string_equals),
    "StringLike": _positive(_string_like),
    "StringNotLike": _negated(_string_like),
    "ArnEquals": _positive(_arn_like),
    "ArnLike": _positive(_arn_like),
    "ArnNotEquals": _negated(_arn_like),
    "ArnNotLike": _negated(_arn_like),
    "Null": lambda value, wanted: (value is None) == (wanted == ["true"]),
}


# ------------------------------------------------------------------------------ helpers


def _strings(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(item, str) for item in items):
        raise ValueError(f"expected strings (resolve the template's intrinsics first), got {value!r}")
    return list(items)


@cache
def _glob(pattern: str, case_sensitive: bool) -> Callable[[str], bool]:
    """IAM wildcards: ``*`` any run of characters, ``?`` one character; nothing else is special."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    compiled = re.compile(f"^{regex}$", 0 if case_sensitive else re.IGNORECASE)
    return lambda value: compiled.match(value) is not None
