"""DynamoDB's attribute values taken as the copies they are: botocore's parse of an answer on the in-process
path, and moto's parse of a request.

botocore's JSON parser reads every attribute value of every item in a DynamoDB answer by walking the
``AttributeValue`` structure shape: for each of its ten members it looks the member's wire name up in
the value and parses what it finds, recursing the same way into ``M`` and ``L``. For a value of the
wire form moto writes (one of ``S``, ``N`` with a ``str``, ``BOOL``, ``NULL`` with a ``bool``, ``SS``,
``NS`` with a list of ``str``, ``M`` with ``str`` keys to such values, ``L`` with a list of such values)
that walk answers a copy of it: strings and booleans are returned as they are (``_default_handle``), a
map key by key and a list item by item. ``Parser`` answers that copy directly; every other value (binary
``B``/``BS``, which botocore decodes from base64, a ``None``, more than one member, another type) and
every other shape take botocore's own code.

Used by intentbus_local.direct_calls for the JSON protocol only while ``PINS`` holds (botocore's code
as found, and the shape as DynamoDB's model has it); tested against botocore's own parser in
tests/integration/test_direct_calls.py.

moto reads each request's JSON body with its own parser (``moto.core.parse``), the same walk over the
same shapes (``_parse_structure``, ``_parse_map``, ``_parse_list``, ``_default_handle``): ``apply``
makes the JSON protocol's parser answer the copy the same way, while ``MOTO_PINS`` holds and the
parser builds plain dicts (``MAP_TYPE``); tested against moto's own parser in the same file.
"""

from __future__ import annotations

import functools
from typing import Any

from botocore.model import Shape
from botocore.parsers import BaseJSONParser, JSONParser, ResponseParser

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="botocore 1.44.8",
    sources={
        "botocore.parsers.BaseJSONParser._handle_structure": "c0149450e9824bc3",
        "botocore.parsers.BaseJSONParser._handle_map": "2bbe776e7fdf4c4a",
        "botocore.parsers.ResponseParser._handle_list": "7e734103cb6423b8",
        "botocore.parsers.ResponseParser._parse_shape": "448f05949c380e13",
        "botocore.parsers.ResponseParser._default_handle": "88c1ab7f9c988be8",
    },
)
MOTO_PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.core.parse.BaseJSONParser._parse_structure": "2de165721ba4b69e",
        "moto.core.parse.RequestParser._parse_shape": "86db10854efaf7e3",
        "moto.core.parse.RequestParser._parse_list": "e2539182995b831e",
        "moto.core.parse.RequestParser._parse_map": "a9e8feb4d5519e24",
        "moto.core.parse.RequestParser._default_handle": "88c1ab7f9c988be8",
    },
)
_MEMBERS = {
    "S": "string",
    "N": "string",
    "B": "blob",
    "SS": "list",
    "NS": "list",
    "BS": "list",
    "M": "map",
    "L": "list",
    "NULL": "boolean",
    "BOOL": "boolean",
}
_NOT_A_COPY = object()


@functools.cache
def holds() -> bool:
    """botocore's code as found, and a JSON parser that inherits it unchanged."""
    inherited = all(
        getattr(JSONParser, name) is vars(owner)[name]
        for owner, name in (
            (BaseJSONParser, "_handle_structure"),
            (BaseJSONParser, "_handle_map"),
            (ResponseParser, "_handle_list"),
            (ResponseParser, "_parse_shape"),
            (ResponseParser, "_default_handle"),
        )
    )
    return inherited and PINS.holds()


class Parser(JSONParser):
    def _handle_structure(self, shape: Shape, value: Any) -> Any:
        if shape.name == "AttributeValue" and _is_attribute_value(shape):
            copied = _copy(value)
            if copied is not _NOT_A_COPY:
                return copied
        return super()._handle_structure(shape, value)  # type: ignore[misc]


_checked: dict[int, tuple[Any, bool]] = {}
"""``id`` of a shape's model -> (the model, whether it is DynamoDB's ``AttributeValue``), checked once."""


def apply() -> None:
    """moto's JSON request parser answers an attribute value's copy too (idempotent; nothing is
    replaced on a moto whose code moved)."""
    from moto.core import parse

    if parse.PROTOCOL_PARSERS.get("json") is parse.JSONParser and _moto_holds():
        parse.PROTOCOL_PARSERS["json"] = request_parser()


def _moto_holds() -> bool:
    from moto.core import parse

    inherited = all(
        getattr(parse.JSONParser, name) is vars(owner)[name]
        for owner, name in (
            (parse.BaseJSONParser, "_parse_structure"),
            (parse.RequestParser, "_parse_shape"),
            (parse.RequestParser, "_parse_list"),
            (parse.RequestParser, "_parse_map"),
            (parse.RequestParser, "_default_handle"),
        )
    )
    return inherited and MOTO_PINS.holds()


@functools.cache
def request_parser() -> Any:
    """moto's JSON request parser, answering an attribute value's copy where its walk would."""
    from moto.core.parse import JSONParser as MotoJSONParser

    class RequestParser(MotoJSONParser):
        def _parse_structure(self, shape: Shape, value: Any) -> Any:
            if self.MAP_TYPE is dict and shape.name == "AttributeValue" and _is_attribute_value(shape):
                copied = _copy(value)
                if copied is not _NOT_A_COPY:
                    return copied
            return super()._parse_structure(shape, value)  # type: ignore[no-untyped-call]

    return RequestParser


def _is_attribute_value(shape: Any) -> bool:
    model = shape._shape_model
    found = _checked.get(id(model))
    if found is None or found[0] is not model:
        found = _checked[id(model)] = (model, _attribute_value_model(shape))
    return found[1]


def _attribute_value_model(shape: Any) -> bool:
    """DynamoDB's ``AttributeValue`` as its model has it (its members, their wire names and types)."""
    members = shape.members
    if shape.type_name != "structure" or shape.is_document_type or getattr(shape, "is_tagged_union", False):
        return False
    if {name: member.type_name for name, member in members.items()} != _MEMBERS:
        return False
    if any(member.serialization.get("name", name) != name for name, member in members.items()):
        return False
    return bool(
        members["M"].key.type_name == "string"
        and members["M"].value.name == "AttributeValue"
        and members["L"].member.name == "AttributeValue"
        and members["SS"].member.type_name == "string"
        and members["NS"].member.type_name == "string"
    )


def _copy(value: Any) -> Any:
    """What botocore's walk answers for a value of the wire form described above, else ``_NOT_A_COPY``."""
    if type(value) is not dict or len(value) != 1:
        return _NOT_A_COPY
    ((tag, inner),) = value.items()
    if tag in ("S", "N"):
        return {tag: inner} if type(inner) is str else _NOT_A_COPY
    if tag in ("BOOL", "NULL"):
        return {tag: inner} if type(inner) is bool else _NOT_A_COPY
    if tag in ("SS", "NS"):
        if type(inner) is list and all(type(item) is str for item in inner):
            return {tag: list(inner)}
        return _NOT_A_COPY
    if tag == "M" and type(inner) is dict:
        mapped: dict[str, Any] = {}
        for key, item in inner.items():
            copied = _copy(item)
            if type(key) is not str or copied is _NOT_A_COPY:
                return _NOT_A_COPY
            mapped[key] = copied
        return {"M": mapped}
    if tag == "L" and type(inner) is list:
        listed: list[Any] = []
        for item in inner:
            copied = _copy(item)
            if copied is _NOT_A_COPY:
                return _NOT_A_COPY
            listed.append(copied)
        return {"L": listed}
    return _NOT_A_COPY
