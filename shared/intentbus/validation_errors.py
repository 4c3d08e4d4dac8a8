"""Pydantic validation errors told without the input: locations, error types, schema-only messages.

The input validated here is a producer's event or a model's answer, and neither may reach a reason, a
log line or a trace through its validation errors. pydantic puts the input in three places: the
``input`` of each error (``input_value=...`` in ``str(error)``), the message of some error types (a
validator's own ``ValueError``, an invalid union tag, a parser's detail), and the location, which
holds the input's own keys where the schema names none (an unknown key, a key of a dict). So a
problem is told by its location with every key the schema does not name shown as ``<key>``, and by
pydantic's message only for the error types whose message is made of the schema's terms alone (the
error type names the others).
"""

import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AliasChoices, AliasPath, BaseModel, ValidationError

KEY = "<key>"
"""Stands for a key of the input that the schema does not name."""

SCHEMA_ONLY_MESSAGES = frozenset(
    {
        "arguments_type",
        "bool_parsing",
        "bool_type",
        "bytes_too_long",
        "bytes_too_short",
        "bytes_type",
        "callable_type",
        "complex_str_parsing",
        "complex_type",
        "dataclass_exact_type",
        "dataclass_type",
        "date_from_datetime_inexact",
        "date_future",
        "date_past",
        "date_type",
        "datetime_future",
        "datetime_past",
        "datetime_type",
        "decimal_max_digits",
        "decimal_max_places",
        "decimal_parsing",
        "decimal_type",
        "decimal_whole_digits",
        "default_factory_not_called",
        "dict_type",
        "enum",
        "extra_forbidden",
        "finite_number",
        "float_parsing",
        "float_type",
        "frozen_field",
        "frozen_instance",
        "frozen_set_type",
        "greater_than",
        "greater_than_equal",
        "int_from_float",
        "int_parsing",
        "int_parsing_size",
        "int_type",
        "invalid_key",
        "is_instance_of",
        "is_subclass_of",
        "iterable_type",
        "json_type",
        "less_than",
        "less_than_equal",
        "list_type",
        "literal_error",
        "missing",
        "missing_argument",
        "missing_keyword_only_argument",
        "missing_positional_only_argument",
        "missing_sentinel_error",
        "model_attributes_type",
        "model_type",
        "multiple_argument_values",
        "multiple_of",
        "none_required",
        "recursion_loop",
        "set_item_not_hashable",
        "set_type",
        "string_not_ascii",
        "string_pattern_mismatch",
        "string_sub_type",
        "string_too_long",
        "string_too_short",
        "string_type",
        "string_unicode",
        "time_delta_type",
        "time_type",
        "timezone_aware",
        "timezone_naive",
        "too_long",
        "too_short",
        "tuple_type",
        "union_tag_not_found",
        "unexpected_keyword_argument",
        "unexpected_positional_argument",
        "url_scheme",
        "url_too_long",
        "url_type",
        "uuid_type",
        "uuid_version",
    }
)
"""Error types whose message is made only of the schema's terms (limits, patterns, expected values,
class names) and counts, never of the input."""

WITHOUT_DETAIL = {
    "date_from_datetime_parsing": "Input should be a valid date or datetime",
    "date_parsing": "Input should be a valid date in the format YYYY-MM-DD",
    "datetime_from_date_parsing": "Input should be a valid datetime or date",
    "datetime_parsing": "Input should be a valid datetime",
    "json_invalid": "Invalid JSON",
    "time_delta_parsing": "Input should be a valid timedelta",
    "time_parsing": "Input should be in a valid time format",
    "url_parsing": "Input should be a valid URL",
    "url_syntax_violation": "Input violated strict URL syntax rules",
    "uuid_parsing": "Input should be a valid UUID",
}
"""Error types whose message is this text and then a parser's detail, which may quote the input: told by
the text alone. Any type in neither set, a validator's own ``ValueError`` or a custom type included,
is told by its type: ``invalid (value_error)``."""


@dataclass(frozen=True)
class Problem:
    """One validation error: where in the input, and what is wrong, told without the input's values."""

    location: tuple[str | int, ...]
    message: str

    def where(self, prefix: str = "") -> str:
        """The location as a dotted path after ``prefix`` (``payload.``), or the prefix's own name."""
        path = ".".join(str(part) for part in self.location)
        return f"{prefix}{path}" if path else prefix.rstrip(".")


def problems(error: ValidationError, model: type[BaseModel]) -> list[Problem]:
    """Each error of validating ``model``, told without anything of the input."""
    return [
        Problem(_location(model, item["loc"]), _message(item["type"], item["msg"]))
        for item in error.errors(include_url=False, include_context=False, include_input=False)
    ]


def _message(error_type: str, message: str) -> str:
    if error_type in SCHEMA_ONLY_MESSAGES:
        return message
    return WITHOUT_DETAIL.get(error_type, f"invalid ({error_type})")


def _location(model: type[BaseModel], loc: Sequence[str | int]) -> tuple[str | int, ...]:
    shown: list[str | int] = []
    annotation: Any = model
    for part in loc:
        named, annotation = _step(annotation, part)
        shown.append(part if named else KEY)
    return tuple(shown)


def _step(annotation: Any, part: str | int) -> tuple[bool, Any]:
    """Whether the schema names ``part`` at ``annotation``, and the annotation it leads to."""
    annotation = _unwrapped(annotation)
    origin = get_origin(annotation)
    if isinstance(part, int):
        args = [arg for arg in get_args(annotation) if arg is not Ellipsis]
        return True, args[0] if origin in (list, tuple, set, frozenset) and len(args) == 1 else Any
    if part == "[key]":  # pydantic's marker for a dict key that failed its own validation
        return True, Any
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for name, info in annotation.model_fields.items():
            if part in _names(name, info.alias, info.validation_alias):
                return True, info.annotation
        return False, Any  # an unknown key (extra_forbidden)
    if origin in (Union, types.UnionType):
        # A union names its members in the location (their schema's label, or the tag that matched):
        # never the input.
        return True, _member(get_args(annotation), part)
    if origin is dict or (isinstance(origin, type) and issubclass(origin, Mapping)):
        key_and_value = get_args(annotation)
        return False, key_and_value[1] if len(key_and_value) == 2 else Any
    return False, Any


def _unwrapped(annotation: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` as ``X`` (pydantic adds no location for either)."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
            continue
        if origin in (Union, types.UnionType):
            members = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _names(name: str, alias: str | None, validation_alias: str | AliasPath | AliasChoices | None) -> set[str]:
    names = {name}
    if alias:
        names.add(alias)
    choices = validation_alias.choices if isinstance(validation_alias, AliasChoices) else [validation_alias]
    for choice in choices:
        if isinstance(choice, str):
            names.add(choice)
        elif isinstance(choice, AliasPath) and choice.path and isinstance(choice.path[0], str):
            names.add(choice.path[0])
    return names


def _member(members: tuple[Any, ...], label: str) -> Any:
    """The union member a location label names: a model by its class name or its tag's value."""
    for candidate in members:
        member = _unwrapped(candidate)
        if not (isinstance(member, type) and issubclass(member, BaseModel)):
            continue
        if member.__name__ == label:
            return member
        for info in member.model_fields.values():
            tag = _unwrapped(info.annotation)
            if get_origin(tag) is Literal and label in [str(value) for value in get_args(tag)]:
                return member
    return Any
