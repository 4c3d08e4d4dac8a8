"""The dataclasses whose ``__init__`` (and refusals, and repr) are written by hand (``intentbus.frozen``)
behave as the generated ones did: the same constructor (fields in order, the same defaults, positional or
by keyword), the same repr text, the same equality and hash where they compare by value, and a frozen one
still refuses assignment and deletion."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from intentbus.batch_reads import BatchReads
from intentbus.budgets import BudgetBreach
from intentbus.definition import (
    Budget,
    CommandSpec,
    DecisionContext,
    ModelAgent,
    RetryPolicy,
    ScriptedAgent,
    Step,
    Tool,
    ToolContext,
    Workflow,
)
from intentbus.frozen import Frozen
from intentbus.journal import Commit, CommitResult, Snapshot
from intentbus.ports import SnapshotRequest
from intentbus.producers import ProducerBindings
from intentbus.registry import TypeSpec
from intentbus.retries import Delivery
from intentbus.stages import authorize, decide
from intentbus.stages.authorize import AuthorizeStage
from intentbus.stages.common import Fact, StageDeps, StageResult
from intentbus.stages.decide import DecideStage
from intentbus.stages.record import RecordStage
from intentbus.stages.validate import BusSender, ValidateStage
from intentbus.telemetry import TraceHeader
from intentbus.trace_context import TraceParent

HAND_WRITTEN: list[type[Any]] = [
    AuthorizeStage,
    Budget,
    BudgetBreach,
    BusSender,
    CommandSpec,
    Commit,
    CommitResult,
    DecideStage,
    DecisionContext,
    Delivery,
    Fact,
    ModelAgent,
    ProducerBindings,
    RecordStage,
    RetryPolicy,
    ScriptedAgent,
    Snapshot,
    SnapshotRequest,
    StageDeps,
    StageResult,
    Step,
    Tool,
    ToolContext,
    TraceHeader,
    TraceParent,
    TypeSpec,
    ValidateStage,
    Workflow,
    authorize._Turn,
    decide._Checked,
    decide._Turn,
]
MUTABLE = {AuthorizeStage, DecideStage, RecordStage, StageDeps, ValidateStage, Workflow}
NEVER_PRINTED = {AuthorizeStage, BusSender, DecideStage, RecordStage, StageDeps, ValidateStage}
NEVER_PRINTED |= {authorize._Turn, decide._Checked, decide._Turn}
BY_VALUE = {Budget, Snapshot, SnapshotRequest, TraceHeader, TraceParent, TypeSpec}
"""Compared and hashed by their fields, as ``@dataclass(frozen=True)`` made them."""
VALID: dict[type[Any], dict[str, Any]] = {Commit: {"expected_version": None, "state": None, "create": False}}
"""Values a class's own checks or ``__post_init__`` need, in place of the stand-ins."""


class _Value:
    """A stand-in field value: equal to itself only, hashable, shown by its name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


for _core in (AuthorizeStage, DecideStage, RecordStage, ValidateStage):
    VALID[_core] = {"store": BatchReads(_Value("store"))}  # type: ignore[arg-type]  # kept as given


def _values(cls: type[Any]) -> dict[str, Any]:
    return {item.name: _Value(item.name) for item in dataclasses.fields(cls)} | VALID.get(cls, {})


def _required(cls: type[Any]) -> dict[str, Any]:
    values = _values(cls)
    return {
        item.name: values[item.name]
        for item in dataclasses.fields(cls)
        if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING
    }


def _generated(cls: type[Any]) -> type[Any]:
    """The class ``@dataclass`` would generate from the same fields (frozen and compared as ``cls`` is)."""
    made = dataclasses.make_dataclass(
        cls.__name__,
        [
            (item.name, Any, copy)
            for item, copy in zip(dataclasses.fields(cls), _copied_fields(cls), strict=True)
        ],
        eq=cls in BY_VALUE,
        frozen=cls not in MUTABLE,
    )
    made.__qualname__ = cls.__qualname__
    return made


def _copied_fields(cls: type[Any]) -> list[Any]:
    return [
        dataclasses.field(default=item.default, default_factory=item.default_factory, repr=item.repr)
        for item in dataclasses.fields(cls)
    ]


@pytest.mark.parametrize("cls", HAND_WRITTEN, ids=lambda cls: cls.__qualname__)
def test_the_constructor_takes_the_fields_in_order_with_their_defaults(cls: type[Any]) -> None:
    parameters = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in parameters] == [item.name for item in dataclasses.fields(cls)]
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters)

    values = _values(cls)
    by_keyword, by_position = cls(**values), cls(*values.values())
    for name, value in values.items():
        assert getattr(by_keyword, name) is value
        assert getattr(by_position, name) is value

    required = _required(cls)
    defaulted, reference = cls(**required), _generated(cls)(**required)
    for item in dataclasses.fields(cls):
        made, expected = getattr(defaulted, item.name), getattr(reference, item.name)
        assert type(made) is type(expected), item.name
        assert made == expected or repr(made) == repr(expected), item.name  # a default made by a factory


@pytest.mark.parametrize("cls", HAND_WRITTEN, ids=lambda cls: cls.__qualname__)
def test_repr_equality_and_hash_are_the_generated_ones(cls: type[Any]) -> None:
    values = _values(cls)
    made, reference = cls(**values), _generated(cls)(**values)

    if cls in NEVER_PRINTED:  # no repr of its own
        assert repr(made).startswith(f"<{cls.__module__}.{cls.__qualname__} object at ")
    else:
        assert repr(made) == repr(reference)
    if cls in BY_VALUE:
        assert made == cls(**values)
        assert hash(made) == hash(reference)
        assert made != cls(**(values | {dataclasses.fields(cls)[0].name: _Value("other")}))
    else:
        assert made != cls(**values)
        assert made == made  # noqa: PLR0124 - by identity


@pytest.mark.parametrize(
    "cls", [cls for cls in HAND_WRITTEN if cls not in MUTABLE], ids=lambda cls: cls.__qualname__
)
def test_a_frozen_one_refuses_assignment_and_deletion(cls: type[Any]) -> None:
    made = cls(**_values(cls))
    name = dataclasses.fields(cls)[0].name

    assert issubclass(cls, Frozen)
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"):
        setattr(made, name, 1)
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot delete field '{name}'"):
        delattr(made, name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.other = 1


@pytest.mark.parametrize("cls", HAND_WRITTEN, ids=lambda cls: cls.__qualname__)
def test_replace_makes_a_changed_copy(cls: type[Any]) -> None:
    values = _values(cls)
    made = cls(**values)
    name = next(item.name for item in dataclasses.fields(cls) if item.name not in VALID.get(cls, {}))
    changed = dataclasses.replace(made, **{name: _Value("changed")})

    assert getattr(changed, name).name == "changed"
    assert all(getattr(changed, other) is value for other, value in values.items() if other != name)


def test_a_commit_still_checks_its_versions() -> None:
    with pytest.raises(ValueError, match="conditioned on the version it read"):
        Commit(entry=_Value("entry"), tenant_id="t", run_id="r", expected_version=None, state=_Value("state"))  # type: ignore[arg-type]
