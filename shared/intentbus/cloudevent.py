"""Reads a CloudEvents 1.0 structured-mode event (JSON format) into the envelope's fields.

Context attributes keep their names; the workflow's fields travel as extension attributes
(``tenantid``, ``runid``, ...; ``intentbus.extensions.WORKFLOW_ATTRIBUTES``); ``traceparent`` and
``tracestate`` are kept as they are; every other extension attribute is kept, within bounds, in the
envelope's ``extensions``. An attribute whose value is ``null`` is unset, as the JSON format says.

``data`` is read as ``datacontenttype`` says: JSON when it is absent or a JSON media type (``*/json``,
``*/*+json``), text otherwise; ``data_base64`` is binary. What becomes of it is the type's payload
model's to say (``payload_for``): a JSON object is the payload itself; anything else (a string, a
number, an array, ``null``, text, binary) only fills a payload model's ``data`` field, one of
``Base64Bytes`` for binary.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import BaseModel
from pydantic.types import Base64Encoder, EncodedBytes

from intentbus.envelope import Envelope
from intentbus.errors import MalformedInput
from intentbus.extensions import WORKFLOW_ATTRIBUTES, ExtensionProblem, check_extensions
from intentbus.registry import TypeSpec

DATA_FIELD = "data"
"""The payload model's field that takes data other than a JSON object."""
ENVELOPE_NAMES = frozenset(Envelope.model_fields) | {"event_type", "timestamp"}
"""What a CloudEvent may also say in the native envelope's own words (``tenant_id``, ``payload``, ...)."""
_REQUIRED = "specversion"
"""Kept even when ``null``: unset, it is still required, and the envelope says so."""


class DataForm(Enum):
    ABSENT = "absent"
    JSON = "json"
    TEXT = "text"
    BINARY = "binary"


@dataclass(frozen=True)
class EventData:
    """A CloudEvent's data as its JSON format says to read it: a JSON value, text, or base64 text."""

    form: DataForm
    value: Any = None

    @property
    def field(self) -> str:
        return "data_base64" if self.form is DataForm.BINARY else "data"

    def described(self) -> str:
        if self.form is DataForm.BINARY:
            return "binary data (data_base64)"
        if self.form is DataForm.TEXT:
            return "text (its datacontenttype is not JSON)"
        if self.form is DataForm.ABSENT:
            return "no data"
        kinds = {
            dict: "a JSON object",
            str: "a JSON string",
            list: "a JSON array",
            bool: "a JSON boolean",
            type(None): "JSON null",
        }
        return kinds.get(type(self.value), "a JSON number")


_DATA_NAMES = frozenset(("data", "data_base64"))
_OWN_NAMES = ENVELOPE_NAMES | _DATA_NAMES
"""Names read as they are: an event that sends only these (as the pipeline publishes them) has no alias
to map, no extension to keep and no two names for one field."""


def read_cloudevent(detail: dict[str, Any]) -> tuple[dict[str, Any], EventData | None]:
    """The envelope's fields from a structured-mode event, and its data (``None``: it sent ``payload``)."""
    if _OWN_NAMES.issuperset(detail):  # the loop below, less what cannot happen here: ~40% cheaper
        fields = {
            key: value
            for key, value in detail.items()
            if (value is not None or key == _REQUIRED) and key not in _DATA_NAMES
        }
        return _with_data(detail, fields)
    return read_by_names(detail)


def read_by_names(detail: dict[str, Any]) -> tuple[dict[str, Any], EventData | None]:
    """``read_cloudevent`` for any event: every attribute read by its name (an alias mapped, an extension
    kept and bounded, two names for one field refused)."""
    fields: dict[str, Any] = {}
    extensions: dict[str, Any] = {}
    for key, value in detail.items():
        if key in ("data", "data_base64") or (value is None and key != _REQUIRED):
            continue
        if key in WORKFLOW_ATTRIBUTES or key in ENVELOPE_NAMES:
            name = WORKFLOW_ATTRIBUTES.get(key, key)
            if name in fields and fields[name] != value:
                raise MalformedInput(f"{key} and {name} disagree: send one", field=key)
            fields[name] = value
        else:
            extensions[key] = value
    if extensions:
        if "extensions" in fields:
            raise MalformedInput(
                "extension attributes and an extensions object: send the attributes", field="extensions"
            )
        try:
            check_extensions(extensions, at="")
        except ExtensionProblem as problem:
            raise MalformedInput(problem.reason, field=problem.field) from None
        fields["extensions"] = extensions
    return _with_data(detail, fields)


def _with_data(detail: dict[str, Any], fields: dict[str, Any]) -> tuple[dict[str, Any], EventData | None]:
    data = _data(detail, fields.get("datacontenttype"))
    if "payload" in fields:
        if data.form is not DataForm.ABSENT:
            raise MalformedInput("data and payload: send the payload as data", field="payload")
        return fields, None
    return fields, data


_ABSENT = EventData(DataForm.ABSENT)
"""Immutable: one for every event without data."""


def _data(detail: dict[str, Any], content_type: Any) -> EventData:
    if "data" in detail and "data_base64" in detail:
        raise MalformedInput("data and data_base64 exclude each other: send one", field="data_base64")
    if content_type is not None and not is_media_type(content_type):
        raise MalformedInput("datacontenttype is not a media type (type/subtype)", field="datacontenttype")
    if "data_base64" in detail:
        encoded = detail["data_base64"]
        if not isinstance(encoded, str) or not _is_base64(encoded):
            raise MalformedInput("data_base64 is not base64 text", field="data_base64")
        return EventData(DataForm.BINARY, encoded)
    if "data" not in detail:
        return _ABSENT
    value = detail["data"]
    if content_type is None or is_json(content_type):
        return EventData(DataForm.JSON, value)
    if not isinstance(value, str):
        told = EventData(DataForm.JSON, value).described()
        raise MalformedInput(
            f"datacontenttype is not JSON, so data is text, a JSON string: it is {told}",
            field="datacontenttype",
        )
    return EventData(DataForm.TEXT, value)


def is_media_type(value: object) -> bool:
    if not isinstance(value, str):
        return False
    kind, slash, subtype = value.split(";", 1)[0].strip().partition("/")
    return bool(kind and slash and subtype) and " " not in kind + subtype


def is_json(media_type: str) -> bool:
    """JSON-formatted content, as the JSON format defines it: ``*/json`` or ``*/*+json``."""
    subtype = media_type.split(";", 1)[0].strip().lower().partition("/")[2]
    return subtype == "json" or subtype.endswith("+json")


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def payload_for(data: EventData, spec: TypeSpec) -> dict[str, Any]:
    """The payload the type's model validates, or why this type cannot take this data (naming it)."""
    if data.form is DataForm.JSON and isinstance(data.value, dict):
        return data.value
    if data.form is DataForm.ABSENT:
        return {}
    takes = data_form_of(spec.model)
    if takes is None:
        raise MalformedInput(
            f"type {spec.name!r} takes a JSON object as data, not {data.described()}: its payload model "
            f"has no {DATA_FIELD} field",
            field=data.field,
        )
    if takes is DataForm.BINARY and data.form is not DataForm.BINARY:
        raise MalformedInput(
            f"type {spec.name!r} takes binary data (data_base64), not {data.described()}", field=data.field
        )
    if takes is not DataForm.BINARY and data.form is DataForm.BINARY:
        raise MalformedInput(
            f"type {spec.name!r} takes a JSON value or text as data, not {data.described()}: its payload "
            f"model's {DATA_FIELD} field is not Base64Bytes",
            field=data.field,
        )
    return {DATA_FIELD: data.value}


def data_form_of(model: type[BaseModel]) -> DataForm | None:
    """What a payload model takes besides a JSON object: binary if its ``data`` field is ``Base64Bytes``,
    any other JSON value or text if it has another ``data`` field, nothing else without one."""
    info = model.model_fields.get(DATA_FIELD)
    if info is None or (info.alias is not None and info.alias != DATA_FIELD):
        return None
    binary = any(isinstance(meta, EncodedBytes) and meta.encoder is Base64Encoder for meta in info.metadata)
    return DataForm.BINARY if info.annotation is bytes and binary else DataForm.JSON


def missing_data(spec: TypeSpec) -> MalformedInput:
    """A CloudEvent without data, for a type whose payload model needs some."""
    return MalformedInput(f"type {spec.name!r} takes data: this event has none", field="data")
