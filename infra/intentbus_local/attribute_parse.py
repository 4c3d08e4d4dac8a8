"""DynamoDB's attribute values taken as the copies they are: botocore's parse of an answer on the in-process
path, and moto's parse of a request.

botocore's JSON parser reads every attribute value of every item in a DynamoDB answer by walking the
``AttributeValue`` structure shape: for each of its ten members it looks the member's wire name up in
the value and parses what it finds, recursing the same way into ``M`` and ``L``. For a value of the
wire form moto writes (one of ``S``, ``N`` with a ``str``, ``BOOL``, ``NULL`` with a ``bool``, ``SS``,
``NS`` with a list of ``str``, ``M`` with non-empty ``str`` keys to such values, ``L`` with a list of
such values) that walk answers a copy of it: strings and booleans are returned as they are
(``_default_handle``), a map key by key and a list item by item. ``Parser`` answers that copy directly,
the one ``attribute_values.wire_copy`` makes for moto's serializer; every other value (binary
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
from botocore.parsers import JSONParser

from intentbus_local.attribute_values import NOT_WIRE_FORM, is_plain_attribute_value, wire_copy
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


@functools.cache
def holds() -> bool:
    """botocore's code as found, and a JSON parser that inherits it unchanged."""
    return PINS.inherited_by(JSONParser) and PINS.holds()


class Parser(JSONParser):
    def _handle_structure(self, shape: Shape, value: Any) -> Any:
        if shape.name == "AttributeValue" and _is_attribute_value(shape):
            copied = wire_copy(value)
            if copied is not NOT_WIRE_FORM:
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

    return MOTO_PINS.inherited_by(parse.JSONParser) and MOTO_PINS.holds()


@functools.cache
def request_parser() -> Any:
    """moto's JSON request parser, answering an attribute value's copy where its walk would."""
    from moto.core.parse import JSONParser as MotoJSONParser

    class RequestParser(MotoJSONParser):
        def _parse_structure(self, shape: Shape, value: Any) -> Any:
            if self.MAP_TYPE is dict and shape.name == "AttributeValue" and _is_attribute_value(shape):
                copied = wire_copy(value)
                if copied is not NOT_WIRE_FORM:
                    return copied
            return super()._parse_structure(shape, value)  # type: ignore[no-untyped-call]

    return RequestParser


def _is_attribute_value(shape: Any) -> bool:
    """DynamoDB's ``AttributeValue`` as ``wire_copy`` assumes it (checked once per shape model), and not
    a tagged union (whose parse checks its members first)."""
    model = shape._shape_model
    found = _checked.get(id(model))
    if found is None or found[0] is not model:
        plain = is_plain_attribute_value(shape) and not getattr(shape, "is_tagged_union", False)
        found = _checked[id(model)] = (model, plain)
    return found[1]
