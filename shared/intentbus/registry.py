"""Maps type names to their kind and payload model; exports JSON Schema for producers.

A payload field can be marked sensitive (``Annotated[str, SENSITIVE]``, or
``Field(json_schema_extra={"sensitive": True})``): ``TypeRegistry.redact`` then replaces its value
wherever the payload is logged, and the exported JSON Schema says ``"sensitive": true``.
"""

import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Annotated, Any, ClassVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from intentbus.envelope import Envelope, Kind
from intentbus.errors import IntentbusError
from intentbus.frozen import Frozen, fields_repr, frozen_dataclass

SENSITIVE: Any = Field(json_schema_extra={"sensitive": True})
"""Marks a payload field sensitive: ``email: Annotated[str, SENSITIVE]``."""

REDACTED = "[redacted]"
"""What a sensitive value is replaced with."""

WITHHELD = "[withheld: unregistered type]"
"""A payload whose type the registry does not know: nothing says which of its fields are sensitive."""


class Payload(BaseModel):
    """Base for every payload model: immutable, and unknown fields are an error, not a surprise."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


@frozen_dataclass(init=False, repr=False, unsafe_hash=True)  # immutable (Frozen): hashed by value
class TypeSpec(Frozen):
    """A registered event or command type: its kind, payload model and the workflow that owns it."""

    name: str
    kind: Kind
    model: type[BaseModel]
    owner: str
    """The workflow that declared the type, or ``intentbus`` for the pipeline's own facts."""

    def __init__(self, name: str, kind: Kind, model: type[BaseModel], owner: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "owner", owner)

    __repr__ = fields_repr


class UnknownType(IntentbusError, LookupError):
    code: ClassVar[str] = "unknown_type"


class DuplicateType(IntentbusError, ValueError):
    code: ClassVar[str] = "duplicate_type"


class TypeRegistry:
    def __init__(
        self, specs: Iterable[TypeSpec] = (), deferred: Mapping[str, Callable[[str], TypeSpec]] | None = None
    ) -> None:
        """``deferred``: types known by name now, each spec made by its function on first use (the
        pipeline's facts: their models are imported only when a stage reads, publishes or redacts one)."""
        self._specs: dict[str, TypeSpec] = {}
        self._deferred: dict[str, Callable[[str], TypeSpec]] = dict(deferred or {})
        for spec in specs:
            self.add(spec)

    def add(self, spec: TypeSpec) -> None:
        existing = self._spec(spec.name)
        if existing is not None and existing != spec:
            raise DuplicateType(
                f"type {spec.name!r} is declared by both {existing.owner!r} and {spec.owner!r}"
            )
        self._specs[spec.name] = spec

    def get(self, name: str) -> TypeSpec:
        spec = self._spec(name)
        if spec is None:
            raise UnknownType(name)
        return spec

    def _spec(self, name: str) -> TypeSpec | None:
        spec = self._specs.get(name)
        if spec is None and name in self._deferred:
            spec = self._specs[name] = self._deferred.pop(name)(name)
        return spec

    def __contains__(self, name: object) -> bool:
        return name in self._specs or name in self._deferred

    def __iter__(self) -> Iterator[TypeSpec]:
        for name in list(self._deferred):
            self._spec(name)
        return iter(sorted(self._specs.values(), key=lambda spec: spec.name))

    def sensitive_fields(self, name: str) -> frozenset[str]:
        """The top-level payload fields the type marks sensitive (nested models are redacted too)."""
        model = self.get(name).model
        return frozenset(key for key, info in model.model_fields.items() if is_sensitive(info))

    def redact(self, name: str, payload: Any) -> Any:
        """``payload`` with every value its type marks sensitive replaced by ``REDACTED``, at any depth:
        nested models by their own fields, and a nested envelope (a pipeline fact's event or command)
        by its own type. A type the registry does not know is ``WITHHELD`` whole."""
        spec = self._spec(name)
        if spec is None:
            return WITHHELD
        return self._redact_model(spec.model, payload)

    def _redact_model(self, model: type[BaseModel], value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        if issubclass(model, Envelope):
            return self._redact_envelope(value)
        redacted = dict(value)
        for key, info in model.model_fields.items():
            for present in {key, info.alias or key}:
                if present not in redacted:
                    continue
                if is_sensitive(info):
                    redacted[present] = REDACTED
                else:
                    redacted[present] = self._redact_typed(info.annotation, redacted[present])
        return redacted

    def _redact_envelope(self, value: Mapping[str, Any]) -> dict[str, Any]:
        redacted = dict(value)
        type_name = value.get("type", value.get("event_type"))
        for key in ("payload", "data"):
            if key in redacted:
                known = isinstance(type_name, str)
                redacted[key] = self.redact(type_name, redacted[key]) if known else WITHHELD
        return redacted

    def _redact_typed(self, annotation: Any, value: Any) -> Any:
        """A value by its declared type: models and envelopes inside optionals, lists and dicts."""
        origin = get_origin(annotation)
        if origin is Annotated:
            return self._redact_typed(get_args(annotation)[0], value)
        if origin in (Union, types.UnionType):
            models = [arg for arg in get_args(annotation) if _is_model(arg)]
            return self._redact_model(models[0], value) if len(models) == 1 else value
        if origin in (list, tuple, set, frozenset) and isinstance(value, list | tuple):
            args = [arg for arg in get_args(annotation) if arg is not Ellipsis]
            if len(args) == 1:
                return [self._redact_typed(args[0], item) for item in value]
            if len(args) == len(value):
                return [self._redact_typed(arg, item) for arg, item in zip(args, value, strict=True)]
            return value
        if origin is dict and isinstance(value, Mapping):
            key_and_value = get_args(annotation)
            item_type = key_and_value[1] if len(key_and_value) == 2 else Any
            return {key: self._redact_typed(item_type, item) for key, item in value.items()}
        if _is_model(annotation):
            return self._redact_model(annotation, value)
        return value

    def json_schemas(self) -> dict[str, dict[str, Any]]:
        """One JSON Schema per type: the envelope with ``payload`` typed by the type's model."""
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


def is_sensitive(info: FieldInfo) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and extra.get("sensitive") is True


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
