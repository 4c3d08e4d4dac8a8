"""Tool schemas generated from the command models, so a model is offered exactly what may be proposed.

A command's tool takes the command's payload under ``command`` plus the proposal's ``rationale``,
``confidence`` and ``evidence``: the payload schema is the command model's own JSON Schema, inlined
(no ``$ref``) and without pydantic's titles, which some models' tool use does not resolve.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from intentbus.errors import ConfigurationError

MAX_TOOL_NAME = 64
_NOT_IN_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")
_ANNOTATIONS = ("title",)

RATIONALE_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 2000,
    "description": "Why this command, in one or two sentences, naming the facts it rests on.",
}
CONFIDENCE_SCHEMA: dict[str, Any] = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "description": "How sure you are that this is the right command (0 to 1).",
}
EVIDENCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The facts from the event that support the command, as name: value.",
}


def tool_name(command_type: str) -> str:
    """A tool name Bedrock accepts (``[A-Za-z0-9_-]{1,64}``) for a command type name."""
    name = _NOT_IN_TOOL_NAME.sub("_", command_type)
    if len(name) > MAX_TOOL_NAME:
        digest = hashlib.sha256(command_type.encode()).hexdigest()[:8]
        name = f"{name[: MAX_TOOL_NAME - 9]}_{digest}"
    return name


@functools.cache
def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema for validation, with every ``$ref`` inlined and titles dropped.

    Generated once per model (pydantic takes a good part of a millisecond): treat it as read-only.
    """
    schema = model.model_json_schema(mode="validation")
    definitions = schema.pop("$defs", {})
    return _inline(schema, definitions, ())  # type: ignore[no-any-return]


def _inline(node: Any, definitions: Mapping[str, Any], seen: tuple[str, ...], *, names: bool = False) -> Any:
    if isinstance(node, list):
        return [_inline(item, definitions, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if names:  # the keys of "properties" are field names, not schema keywords
        return {key: _inline(value, definitions, seen) for key, value in node.items()}
    reference = node.get("$ref")
    if isinstance(reference, str):
        name = reference.rsplit("/", 1)[-1]
        if name in seen:
            raise ConfigurationError(f"{name} refers to itself: a tool's input schema cannot be recursive")
        target = _inline(definitions[name], definitions, (*seen, name))
        siblings = {k: v for k, v in node.items() if k != "$ref" and k not in _ANNOTATIONS}
        return {**target, **_inline(siblings, definitions, seen)}
    return {
        key: _inline(value, definitions, seen, names=key in ("properties", "patternProperties"))
        for key, value in node.items()
        if key not in _ANNOTATIONS
    }


def description(model: type[BaseModel], tool_doc: str | None, command_type: str) -> str:
    """The tool's description: what the tool does (its docstring), and that calling it only proposes."""
    summary = _first_paragraph(tool_doc) or _first_paragraph(model.__doc__) or f"The {command_type} command."
    return f"Propose the {command_type} command: {summary} Policy decides whether it may run."


def _first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    return " ".join(text.strip().split("\n\n", 1)[0].split())


def proposal_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The tool's input: the command's payload under ``command`` and the proposal's reasons beside it."""
    return {
        "type": "object",
        "properties": {
            "command": input_schema(model),
            "rationale": RATIONALE_SCHEMA,
            "confidence": CONFIDENCE_SCHEMA,
            "evidence": EVIDENCE_SCHEMA,
        },
        "required": ["command", "rationale", "confidence"],
        "additionalProperties": False,
    }
