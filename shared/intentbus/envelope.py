"""The one envelope every event, command and decision travels in (CloudEvents-compatible)."""

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from functools import cached_property
from typing import Any, Literal, Self

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticSerializationError

from intentbus.extensions import Extensions, check_extensions
from intentbus.ids import derive_id
from intentbus.limits import MAX_SUBJECT_CHARS
from intentbus.model_shortcuts import json_text_of, json_values, shallow_copy, validated

TYPE_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.\-]{0,127}$"
TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$"
MAX_ID_CHARS = 1024
"""An input's id (CloudEvents sets no bound). Where an id becomes part of a DynamoDB key it is hashed
once long (``intentbus.ids.key_part``)."""
MAX_TRACEPARENT_CHARS = 256
MAX_TRACESTATE_CHARS = 2048
MAX_MEDIA_TYPE_CHARS = 256
MAX_SCHEMA_URI_CHARS = 2048


class Kind(StrEnum):
    """Facts, requests and proposals are distinct kinds and never interchangeable."""

    EVENT = "event"
    COMMAND = "command"
    DECISION = "decision"


class Envelope(BaseModel):
    """An immutable message. Field names follow CloudEvents plus the workflow fields of the seed.

    ``type`` also accepts ``event_type``, ``time`` also accepts ``timestamp`` (epoch seconds or
    ISO 8601) and ``payload`` also accepts CloudEvents' ``data``. ``datacontenttype``, ``dataschema``,
    ``traceparent``, ``tracestate`` and ``extensions`` are what a CloudEvent said beyond the workflow's
    fields; the last three are carried on to every envelope that follows this one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    specversion: Literal["1.0"] = "1.0"
    id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    source: str = Field(min_length=1, max_length=256)
    type: str = Field(pattern=TYPE_NAME_PATTERN, validation_alias=AliasChoices("type", "event_type"))
    time: datetime = Field(validation_alias=AliasChoices("time", "timestamp"))
    subject: str | None = Field(default=None, max_length=MAX_SUBJECT_CHARS)
    """Copied onto every envelope that follows this one: bounded, as every field a producer sets is."""
    kind: Kind
    tenant_id: str = Field(pattern=TENANT_PATTERN)
    trace_id: str = Field(min_length=1, max_length=128)
    run_id: str = Field(min_length=1, max_length=128)
    step_index: int = Field(ge=0)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=128)
    causation_id: str | None = Field(default=None, max_length=MAX_ID_CHARS)
    correlation_id: str = Field(min_length=1, max_length=128)
    depth: int = Field(default=0, ge=0)
    version: int = Field(default=0, ge=0)
    payload: dict[str, Any] = Field(validation_alias=AliasChoices("payload", "data"))
    datacontenttype: str | None = Field(default=None, min_length=1, max_length=MAX_MEDIA_TYPE_CHARS)
    """The media type the producer's data came in (``intentbus.cloudevent``); the payload is its reading."""
    dataschema: str | None = Field(default=None, min_length=1, max_length=MAX_SCHEMA_URI_CHARS)
    traceparent: str | None = Field(default=None, min_length=1, max_length=MAX_TRACEPARENT_CHARS)
    """W3C Trace Context, as CloudEvents' Distributed Tracing extension carries it."""
    tracestate: str | None = Field(default=None, max_length=MAX_TRACESTATE_CHARS)
    extensions: Extensions = Field(default_factory=dict)
    """The producer's other CloudEvents extension attributes, within ``intentbus.extensions``' bounds."""

    @field_validator("time")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @field_validator("extensions")
    @classmethod
    def _bounded(cls, value: Extensions) -> Extensions:
        check_extensions(value)
        return value

    def to_json_dict(self) -> dict[str, Any]:
        return json_values(self)

    @cached_property
    def json_text(self) -> str:
        """The envelope as compact JSON, as it travels (a PutEvents entry's ``Detail``): serialized once,
        however often its size is asked and it is sent (the model is immutable). Text that UTF-8 cannot
        hold (a lone surrogate) is escaped."""
        try:
            return json_text_of(self)
        except PydanticSerializationError:
            return json.dumps(self.to_json_dict(), separators=(",", ":"))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=True) if deep else shallow_copy(self, update)
        if update:  # a copy with other fields: not the JSON this one cached
            copied.__dict__.pop("json_text", None)
        return copied

    def follow(
        self,
        *,
        stage: str,
        type: str,
        kind: Kind,
        payload: dict[str, Any],
        time: datetime,
        source: str,
        index: int = 0,
        depth: int | None = None,
        version: int | None = None,
        step_index: int | None = None,
        idempotency_key: str | None = None,
        output_id: str | None = None,
    ) -> "Envelope":
        """The envelope a stage publishes in answer to this one.

        Its id is derived from this envelope's id, the stage and the output's index (unless
        ``output_id`` gives one derived otherwise), so a stage that publishes again after a crash
        publishes the very same ids.
        """
        # Validated as ``model_validate`` does: ``Envelope(...)`` would pack the values as keywords and
        # unpack them again in ``__init__`` (~9 k instructions). What is copied is read from ``__dict__``:
        # a model's attribute is looked up through ``BaseModel.__getattr__``'s slot, which costs more.
        mine = self.__dict__
        own_id = mine["id"]
        return validated(
            Envelope,
            {
                "id": derive_id(own_id, stage, index) if output_id is None else output_id,
                "source": source,
                "type": type,
                "time": time,
                "subject": mine["subject"],
                "kind": kind,
                "tenant_id": mine["tenant_id"],
                "trace_id": mine["trace_id"],
                "run_id": mine["run_id"],
                "step_index": mine["step_index"] if step_index is None else step_index,
                "idempotency_key": idempotency_key,
                "causation_id": own_id,
                "correlation_id": mine["correlation_id"],
                "depth": mine["depth"] if depth is None else depth,
                "version": mine["version"] if version is None else version,
                "payload": payload,
                "traceparent": mine["traceparent"],
                "tracestate": mine["tracestate"],
                "extensions": mine["extensions"],
            },
        )
