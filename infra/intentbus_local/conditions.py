"""Which of a template's Conditions hold for the stack's parameters, as CloudFormation decides them.

moto evaluates a resource's ``Condition`` when it creates a stack, but not when it updates one: an update
parses every changed resource, a conditional one that was never created included, and fails on its first
reference to another resource that was not created either; and it updates a resource whose ``Fn::If``
chose another branch only if the resource itself changed. So the local cloud deploys the template as
CloudFormation reads it for these parameters: without the resources whose condition is false, and with
each ``Fn::If`` replaced by the branch it chose (``AWS::NoValue`` leaving the property out).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def conditions(template: Mapping[str, Any], parameters: Mapping[str, str]) -> dict[str, bool]:
    """Each condition's value; ``parameters`` over the template's defaults."""
    values = {
        name: str(spec["Default"])
        for name, spec in template.get("Parameters", {}).items()
        if isinstance(spec, Mapping) and "Default" in spec
    } | {name: str(value) for name, value in parameters.items()}
    declared: Mapping[str, Any] = template.get("Conditions", {})
    decided: dict[str, bool] = {}

    def condition(name: str) -> bool:
        if name not in decided:
            decided[name] = bool(evaluate(declared[name]))
        return decided[name]

    def evaluate(node: Any) -> Any:
        if isinstance(node, Mapping) and len(node) == 1:
            ((function, argument),) = node.items()
            if function == "Ref":
                return values.get(argument, argument)
            if function == "Condition":
                return condition(argument)
            if function == "Fn::Equals":
                left, right = (evaluate(part) for part in argument)
                return str(left) == str(right)
            if function == "Fn::Not":
                return not evaluate(argument[0])
            if function == "Fn::And":
                return all(evaluate(part) for part in argument)
            if function == "Fn::Or":
                return any(evaluate(part) for part in argument)
            raise ValueError(f"the local cloud cannot evaluate {function} in a condition")
        return node

    return {name: condition(name) for name in declared}


_NO_VALUE = {"Ref": "AWS::NoValue"}
_DROPPED = object()


def without_inactive(body: dict[str, Any], parameters: Mapping[str, str]) -> dict[str, Any]:
    """``body`` without the resources (and outputs) whose condition is false, its ``Fn::If``s decided."""
    holds = conditions(body, parameters)
    for section in ("Resources", "Outputs"):
        entries = body.get(section, {})
        for logical_id in [k for k, r in entries.items() if r.get("Condition") and not holds[r["Condition"]]]:
            del entries[logical_id]
        for entry in entries.values():
            entry.pop("Condition", None)
            for key in [k for k in entry if k != "Type"]:
                entry[key] = _decided(entry[key], holds)
    return body


def _decided(node: Any, holds: Mapping[str, bool]) -> Any:
    if isinstance(node, Mapping):
        if set(node) == {"Fn::If"}:
            name, when_true, when_false = node["Fn::If"]
            chosen = when_true if holds[name] else when_false
            return _DROPPED if chosen == _NO_VALUE else _decided(chosen, holds)
        decided = {key: _decided(value, holds) for key, value in node.items()}
        return {key: value for key, value in decided.items() if value is not _DROPPED}
    if isinstance(node, list):
        return [item for item in (_decided(value, holds) for value in node) if item is not _DROPPED]
    return node
