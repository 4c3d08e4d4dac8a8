"""Validation errors are told without the input they refused: a reason is logged and traced, and the
input is a producer's event or a model's answer (intentbus.validation_errors)."""

from __future__ import annotations

import string
from datetime import datetime
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from intentbus.errors import MalformedInput
from intentbus.validation_errors import KEY, SCHEMA_ONLY_MESSAGES, WITHOUT_DETAIL, problems

CARD = "4111 1111 1111 1111"
TOKEN = "sk_live_9fQ2xR7mTz4LbW1c"


class Disk(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["disk"]
    size_gb: int


class Network(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["network"]
    mbps: int


class Order(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str
    count: int
    labels: dict[str, int] = Field(default_factory=dict)
    device: Annotated[Disk | Network, Field(discriminator="kind")] | None = None
    either: int | str | None = None
    lines: list[Disk] = Field(default_factory=list)
    payload: dict[str, Any] = Field(default_factory=dict, validation_alias="data")

    @field_validator("note")
    @classmethod
    def _no_card(cls, value: str) -> str:
        if "4111" in value:
            raise ValueError(f"a card number in the note: {value}")  # a validator that quotes its input
        return value


def refused(document: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Order.model_validate(document)
    return caught.value


def test_no_input_reaches_the_reason_or_the_field() -> None:
    """The attack: a model (or a producer) puts a card number and a secret where pydantic repeats them —
    a validator's message quoting the value, a key of a dict, an unknown key, an invalid union tag, a
    value of the wrong type — and the reason is logged."""
    error = refused(
        {
            "note": f"pay with {CARD}",
            "count": TOKEN,
            "labels": {TOKEN: "many"},
            "device": {"kind": CARD},
            "lines": [{"kind": "disk", "size_gb": 1, CARD: 2}],
            TOKEN: "x",
        }
    )
    for secret in (CARD, TOKEN):
        assert secret in str(error), "pydantic's own text carries it (input_value=...)"

    malformed = MalformedInput.from_validation(error, Order, prefix="payload.")

    told = f"{malformed.reason} {malformed.field}"
    for secret in (CARD, TOKEN, "4111"):
        assert secret not in told
    assert malformed.field == "payload.note"
    told_each = [
        "payload.note: invalid (value_error)",
        "payload.count: Input should be a valid integer, unable to parse string as an integer",
        f"payload.labels.{KEY}: Input should be a valid integer, unable to parse string as an integer",
        "payload.device: invalid (union_tag_invalid)",
        f"payload.lines.0.{KEY}: Extra inputs are not permitted",
        f"payload.{KEY}: Extra inputs are not permitted",
    ]
    assert [f"{p.where('payload.')}: {p.message}" for p in problems(error, Order)] == told_each
    assert malformed.reason == "; ".join(told_each[:5]) + " (and 1 more)"


def test_the_schema_s_own_names_stay_named() -> None:
    """Fields, aliases, union members and tags the schema declares are not input: they are kept."""
    error = refused(
        {"note": "ok", "count": 1, "device": {"kind": "disk", "size_gb": "big"}, "either": [1], "data": 3}
    )

    assert [problem.where() for problem in problems(error, Order)] == [
        "device.disk.size_gb",
        "either.int",
        "either.str",
        "data",
    ]


def test_every_type_whose_message_is_kept_is_made_of_the_schema_s_terms_only() -> None:
    """If pydantic changes a message template to quote the input, this fails before a reason leaks."""
    from pydantic_core._pydantic_core import list_all_errors

    templates: dict[str, str] = {item["type"]: item["message_template_python"] for item in list_all_errors()}
    schema_terms = {
        "class",
        "class_name",
        "decimal_places",
        "discriminator",
        "expected",
        "expected_plural",
        "expected_schemes",
        "expected_version",
        "field_type",
        "ge",
        "gt",
        "le",
        "lt",
        "max_digits",
        "max_length",
        "min_length",
        "multiple_of",
        "pattern",
        "whole_digits",
        "actual_length",  # a count, not content
    }
    for error_type in SCHEMA_ONLY_MESSAGES:
        assert error_type in templates, f"pydantic has no error type {error_type}"
        fields = {name for _, name, _, _ in string.Formatter().parse(templates[error_type]) if name}
        assert fields <= schema_terms, (error_type, templates[error_type])
    for error_type, text in WITHOUT_DETAIL.items():
        (first, *_) = string.Formatter().parse(templates[error_type])
        assert first[0].rstrip(":, ") == text, (error_type, templates[error_type])


def test_a_parser_s_detail_is_left_out_and_its_message_kept() -> None:
    """The attack: a time that is not one, holding a card number; the parser's detail is not repeated."""

    class Timed(BaseModel):
        at: datetime

    with pytest.raises(ValidationError) as caught:
        Timed.model_validate({"at": CARD})

    (told,) = problems(caught.value, Timed)
    assert (told.where(), told.message) == ("at", WITHOUT_DETAIL[caught.value.errors()[0]["type"]])
    assert caught.value.errors()[0]["msg"].startswith(f"{told.message}, ")
