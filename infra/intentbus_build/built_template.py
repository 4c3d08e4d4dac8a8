"""What ``sam build`` produced, read from its template: each function's and layer's directory, the
functions' architectures and layers, with the template's parameters resolved."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intentbus_build.lambda_python import LAMBDA_DEFAULT_ARCHITECTURE

SERVERLESS_FUNCTION = "AWS::Serverless::Function"
SERVERLESS_LAYER = "AWS::Serverless::LayerVersion"
SDK_REASON_KEY = "BundledSdkReason"
"""Resource Metadata saying why an artifact ships the runtime's own SDK packages (see lambda_python)."""


class BuildError(ValueError):
    """The build directory or its template cannot be read as a sam build."""


@dataclass(frozen=True)
class Layer:
    logical_id: str
    path: Path
    compatible_architectures: tuple[str, ...] | None
    sdk_reason: str


@dataclass(frozen=True)
class Function:
    logical_id: str
    path: Path
    architectures: tuple[str, ...]
    layers: tuple[str, ...]
    """Logical ids of the template's own layers, in order."""
    external_layers: tuple[str, ...]
    """Layers given by ARN: not built here, so neither checked nor counted."""
    sdk_reason: str


@dataclass(frozen=True)
class Build:
    directory: Path
    functions: Mapping[str, Function]
    layers: Mapping[str, Layer]


def read_build(directory: Path, parameters: Mapping[str, str] | None = None) -> Build:
    """``parameters`` override the template's defaults, as ``--parameter-overrides`` would."""
    template_path = directory / "template.yaml"
    if not template_path.is_file():
        raise BuildError(f"no sam build at {directory} (no template.yaml): run 'make build' first")
    template = _load(template_path)
    values = _parameter_values(template, parameters or {})
    resources: Mapping[str, Any] = template.get("Resources", {})
    layers = {
        logical_id: Layer(
            logical_id=logical_id,
            path=directory / str(_resolve(resource["Properties"]["ContentUri"], values)),
            compatible_architectures=_optional_list(
                resource["Properties"].get("CompatibleArchitectures"), values
            ),
            sdk_reason=str(resource.get("Metadata", {}).get(SDK_REASON_KEY, "")).strip(),
        )
        for logical_id, resource in resources.items()
        if resource.get("Type") == SERVERLESS_LAYER
    }
    globals_ = template.get("Globals", {}).get("Function", {})
    functions: dict[str, Function] = {}
    for logical_id, resource in resources.items():
        if resource.get("Type") != SERVERLESS_FUNCTION:
            continue
        props: Mapping[str, Any] = resource.get("Properties", {})
        code_uri = props.get("CodeUri", globals_.get("CodeUri"))
        if not isinstance(code_uri, str):
            raise BuildError(f"{logical_id}: CodeUri {code_uri!r} is not a built directory")
        # SAM appends a resource's lists to Globals' lists.
        architectures = [*globals_.get("Architectures", []), *props.get("Architectures", [])]
        listed = [*globals_.get("Layers", []), *props.get("Layers", [])]
        layer_refs = [
            ref for ref in (_deployed(item, template, values) for item in listed) if ref is not None
        ]
        own = [r["Ref"] for r in layer_refs if isinstance(r, dict) and r.get("Ref") in layers]
        functions[logical_id] = Function(
            logical_id=logical_id,
            path=directory / code_uri,
            architectures=tuple(str(_resolve(a, values)) for a in architectures)
            or (LAMBDA_DEFAULT_ARCHITECTURE,),
            layers=tuple(own),
            external_layers=tuple(
                json.dumps(r) for r in layer_refs if not (isinstance(r, dict) and r.get("Ref") in layers)
            ),
            sdk_reason=str(resource.get("Metadata", {}).get(SDK_REASON_KEY, "")).strip(),
        )
    return Build(directory=directory, functions=functions, layers=layers)


def _load(path: Path) -> dict[str, Any]:
    from cfnlint.decode import cfn_yaml

    decoded = cfn_yaml.loads(path.read_text(encoding="utf-8"), str(path))
    plain: dict[str, Any] = json.loads(json.dumps(decoded))
    return plain


def _parameter_values(template: Mapping[str, Any], overrides: Mapping[str, str]) -> dict[str, str]:
    declared: Mapping[str, Any] = template.get("Parameters", {})
    unknown = set(overrides) - set(declared)
    if unknown:
        raise BuildError(f"the template declares no parameter {', '.join(sorted(unknown))}")
    values = {name: str(p["Default"]) for name, p in declared.items() if "Default" in p}
    values.update(overrides)
    return values


def _resolve(value: Any, parameters: Mapping[str, str]) -> Any:
    if isinstance(value, dict) and set(value) == {"Ref"}:
        name = value["Ref"]
        if name not in parameters:
            raise BuildError(f"!Ref {name}: no such parameter with a value (pass it as NAME=VALUE)")
        return parameters[name]
    return value


NO_VALUE = {"Ref": "AWS::NoValue"}


def _deployed(item: Any, template: Mapping[str, Any], parameters: Mapping[str, str]) -> Any:
    """A list item as CloudFormation deploys it: an ``Fn::If`` decided by its condition, ``None`` for
    ``AWS::NoValue`` (e.g. the optional collector layer, ``OtelCollectorLayerArn``)."""
    if isinstance(item, dict) and set(item) == {"Fn::If"}:
        condition, when_true, when_false = item["Fn::If"]
        item = when_true if _condition(condition, template, parameters) else when_false
    return None if item == NO_VALUE else item


def _condition(name: str, template: Mapping[str, Any], parameters: Mapping[str, str]) -> bool:
    conditions: Mapping[str, Any] = template.get("Conditions", {})
    if name not in conditions:
        raise BuildError(f"no condition {name!r} in the template")
    return _holds(conditions[name], template, parameters)


def _holds(expression: Any, template: Mapping[str, Any], parameters: Mapping[str, str]) -> bool:
    if isinstance(expression, dict) and len(expression) == 1:
        ((function, arguments),) = expression.items()
        if function == "Fn::Equals":
            left, right = (_resolve(argument, parameters) for argument in arguments)
            return str(left) == str(right)
        if function == "Fn::Not":
            return not _holds(arguments[0], template, parameters)
        if function == "Fn::And":
            return all(_holds(argument, template, parameters) for argument in arguments)
        if function == "Fn::Or":
            return any(_holds(argument, template, parameters) for argument in arguments)
        if function == "Condition":
            return _condition(arguments, template, parameters)
    raise BuildError(f"cannot decide the condition {expression!r}")


def _optional_list(value: Any, parameters: Mapping[str, str]) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(str(_resolve(item, parameters)) for item in value)
