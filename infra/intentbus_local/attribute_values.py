"""moto's DynamoDB responses serialized without walking ``AttributeValue``'s shape for every attribute.

moto 5.2.5 (``moto/core/serialize.py``) serializes each attribute value of every item it returns by
its ten-member structure shape: for each member it asks the value picker for the member's keys and
looks each up, so an item of twenty attributes costs two hundred lookups. moto's items are already in
the wire form (``DynamoType.to_json``: ``{"S": "..."}``, ``{"M": {...}}``), and for such a value the
walk answers a copy of it: one member key holds the value, a string (``S``, ``N``) serializes as
itself, a boolean (``BOOL``, ``NULL``) as itself, a string set as its strings, a map (``M``) and a list
(``L``) as their attribute values serialized the same way.

``BaseJSONSerializer._serialize_type_structure`` here copies such a value directly: exactly one key,
of those members, holding exactly those Python types (and a map's keys non-empty strings). Anything
else (binary ``B``/``BS``, which moto base64-encodes, a ``None``, an unexpected type, another picker
or alias providers, a shape with serialization names) goes through moto's own code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.5",
    sources={
        "moto.core.serialize.BaseJSONSerializer._serialize_type_structure": "36873909cd0aeb4d",
        "moto.core.serialize.ResponseSerializer._serialize_type_structure": "f9b47068f40ce489",
        "moto.core.serialize.ResponseSerializer._serialize_structure_member": "437fdce43aa5ac84",
        "moto.core.serialize.ResponseSerializer._serialize": "4eccca5bf02593ef",
        "moto.core.serialize.ResponseSerializer._default_serialize": "25ce8ddbb1a991c0",
        "moto.core.serialize.ResponseSerializer.get_serialized_name": "2c23dcac85ccc396",
        "moto.core.serialize.BaseJSONSerializer._serialize_type_map": "faa32d1fa9a8bfc9",
        "moto.core.serialize.BaseJSONSerializer._serialize_type_list": "f87b14fe9166e099",
        "moto.core.serialize.BaseJSONSerializer._serialize_type_string": "44954e02145012ba",
    },
)

SHAPE_NAME = "AttributeValue"
_AS_IS = {"S": str, "N": str, "BOOL": bool, "NULL": bool}
_STRING_SETS = ("SS", "NS")
_MEMBER_TYPES = {
    "S": "string",
    "N": "string",
    "SS": "list",
    "NS": "list",
    "M": "map",
    "L": "list",
    "NULL": "boolean",
    "BOOL": "boolean",
}
NOT_WIRE_FORM = object()
"""What ``wire_copy`` answers for a value it does not copy (the library's own walk then runs)."""


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.core import serialize

    if "BaseJSONSerializer._serialize_type_structure" not in PINS.replaced:
        PINS.replace(
            serialize.BaseJSONSerializer,
            "_serialize_type_structure",
            _serialize_type_structure_for(serialize),
        )


def wire_copy(value: Any) -> Any:
    """The serialized form of an attribute value in wire form (a copy), or ``NOT_WIRE_FORM``."""
    if type(value) is not dict or len(value) != 1:
        return NOT_WIRE_FORM
    ((kind, inner),) = value.items()
    as_is = _AS_IS.get(kind)
    if as_is is not None:
        return {kind: inner} if type(inner) is as_is else NOT_WIRE_FORM
    if kind in _STRING_SETS:
        if type(inner) is not list or any(type(item) is not str for item in inner):
            return NOT_WIRE_FORM
        return {kind: list(inner)}
    if kind == "M":
        if type(inner) is not dict:
            return NOT_WIRE_FORM
        copied: dict[str, Any] = {}
        for name, member in inner.items():
            if type(name) is not str or not name:  # moto serializes an empty key as the root
                return NOT_WIRE_FORM
            copied[name] = wire_copy(member)
            if copied[name] is NOT_WIRE_FORM:
                return NOT_WIRE_FORM
        return {kind: copied}
    if kind == "L":
        if type(inner) is not list:
            return NOT_WIRE_FORM
        items = [wire_copy(item) for item in inner]
        return NOT_WIRE_FORM if any(item is NOT_WIRE_FORM for item in items) else {kind: items}
    return NOT_WIRE_FORM


def is_plain_attribute_value(shape: Any) -> bool:
    """Whether ``shape`` is DynamoDB's AttributeValue as moto 5.2.5 walks it: members of the types
    ``wire_copy`` assumes, a map and a list of AttributeValue, and no serialization names anywhere."""
    if shape.name != SHAPE_NAME or shape.type_name != "structure" or shape.is_document_type:
        return False
    members = shape.members
    for name, kind in _MEMBER_TYPES.items():
        member = members.get(name)
        if member is None or member.type_name != kind or "name" in member.serialization:
            return False
    nested = [members["M"].value, members["L"].member, members["M"].key]
    nested += [members[name].member for name in _STRING_SETS]
    if any("name" in shape.serialization for shape in nested):
        return False
    return all(shape.name == SHAPE_NAME for shape in nested[:2])


def _serialize_type_structure_for(serialize: Any) -> Callable[..., Any]:
    original = vars(serialize.BaseJSONSerializer)["_serialize_type_structure"]
    picker_class = serialize.XFormedAttributePicker
    defaults = serialize.DEFAULT_ALIAS_PROVIDERS
    plain: dict[int, tuple[Any, bool]] = {}

    def _serialize_type_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if key and getattr(shape, "name", None) == SHAPE_NAME and type(value) is dict:
            known = plain.get(id(shape))
            if known is None or known[0] is not shape:
                known = plain[id(shape)] = (shape, is_plain_attribute_value(shape))
            picker = self._value_picker
            if (
                known[1]
                and type(picker) is picker_class
                and not picker.response_transformers
                and picker.alias_providers is defaults
            ):
                copied = wire_copy(value)
                if copied is not NOT_WIRE_FORM:
                    self._default_serialize(serialized, copied, shape, key)
                    return
        original(self, serialized, value, shape, key)

    return _serialize_type_structure
