"""Maps type names to their kind and payload model; exports JSON Schema for producers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from intentbus.envelope import Kind


class Payload(BaseModel):
    """Base for every payload model: immutable, and unknown fields are an error, not a surprise."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class TypeSpec:
    name: str
    kind: Kind
    model: type[BaseModel]
    owner: str
    """The workflow that declared the type, or ``intentbus`` for the pipeline's own facts."""


class UnknownType(LookupError):
    pass


class DuplicateType(ValueError):
    pass


class TypeRegistry:
    def __init__(self, specs: Iterable[TypeSpec] = ()) -> None:
        self._specs: dict[str, TypeSpec] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: TypeSpec) -> None:
        existing = self._specs.get(spec.name)
        if existing is not None and existing != spec:
            raise DuplicateType(
                f"type {spec.name!r} is declared by both {existing.owner!r} and {spec.owner!r}"
            )
        self._specs[spec.name] = spec

    def get(self, name: str) -> TypeSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise UnknownType(name) from None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[TypeSpec]:
        return iter(sorted(self._specs.values(), key=lambda spec: spec.name))

    def json_schemas(self) -> dict[str, dict[str, Any]]:
        """One JSON Schema per type: the envelope with ``payload`` typed by the type's model."""
        from intentbus.envelope import Envelope

        envelope_schema = Envelope.model_json_schema(by_alias=False)
        schemas: dict[str, dict[str, Any]] = {}
        for spec in self:
            payload_schema = spec.model.model_json_schema()
            defs = payload_schema.pop("$defs", {})
            schema = {
                **envelope_schema,
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": spec.name,
                "description": f"{spec.kind.value} {spec.name} ({spec.owner})",
            }
            properties = dict(schema["properties"])
            properties["type"] = {"const": spec.name, "title": "Type"}
            properties["kind"] = {"const": spec.kind.value, "title": "Kind"}
            properties["payload"] = payload_schema
            schema["properties"] = properties
            if defs:
                schema["$defs"] = {**schema.get("$defs", {}), **defs}
            schemas[spec.name] = schema
        return schemas
