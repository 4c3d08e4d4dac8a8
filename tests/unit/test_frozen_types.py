"""The classes frozen by ``intentbus.frozen`` (refusing assignment at runtime through ``Frozen``) are frozen
to the type checker too: mypy, run with the project's configuration on code assigning to a field of each,
reports each assignment as an error, and nothing else."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from mypy import api

from intentbus.adapters import dynamodb_guard, endpoint_params
from intentbus.execution_claim import Claim, ClaimRequest
from intentbus.frozen import Frozen, FrozenPlain, frozen_dataclass
from intentbus.stages import execute
from tests.unit.test_hand_written_dataclasses import HAND_WRITTEN, MUTABLE

ROOT = Path(__file__).resolve().parents[2]
PLAIN: list[type[Any]] = [Claim, dynamodb_guard.ClaimActions, execute._Read, endpoint_params._Source]
"""Frozen classes written by hand that are not dataclasses at runtime."""
FROZEN = [cls for cls in HAND_WRITTEN if cls not in MUTABLE] + PLAIN


def _first_field(cls: type[Any]) -> str:
    if dataclasses.is_dataclass(cls):
        return dataclasses.fields(cls)[0].name
    return next(iter(cls.__annotations__))


def _assignments(classes: list[type[Any]]) -> tuple[str, dict[int, str]]:
    """Source assigning each class's first field its own value (so the value's type is never the error),
    and the message expected on each line that does; the last line assigns a mutable class's field."""
    lines = ["from typing import Any", ""]
    for module in sorted({cls.__module__ for cls in classes} | {ClaimRequest.__module__}):
        lines.append(f"import {module}")
    lines += ["", "", "def assign(made: Any) -> None:"]
    expected: dict[int, str] = {}
    for index, cls in enumerate(classes):
        name, path = _first_field(cls), f"{cls.__module__}.{cls.__qualname__}"
        generic = "[Any]" if getattr(cls, "__parameters__", ()) else ""
        lines.append(f"    value{index}: {path}{generic} = made")
        lines.append(f"    value{index}.{name} = value{index}.{name}")
        expected[len(lines)] = f'Property "{name}" defined in "{cls.__name__}" is read-only'
    lines.append(f"    request: {ClaimRequest.__module__}.ClaimRequest = made")
    lines.append("    request.made = None")
    return "\n".join(lines) + "\n", expected


def test_at_runtime_the_decorator_is_dataclass_and_the_plain_base_is_frozen() -> None:
    """What makes the classes frozen to mypy adds nothing when they are made."""
    assert frozen_dataclass is dataclasses.dataclass
    assert FrozenPlain is Frozen
    assert all(cls.__bases__ == (Frozen,) for cls in PLAIN)


def _declared_frozen() -> set[tuple[str, str]]:
    """(module, class) of each class in the library whose written bases name ``Frozen`` or ``FrozenPlain``
    (but ``FrozenPlain`` itself, as type checkers see it)."""
    found = set()
    for path in (ROOT / "shared").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT / "shared").with_suffix("").parts)
        if module == "intentbus.frozen":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and base.id in {"Frozen", "FrozenPlain"} for base in node.bases
            ):
                found.add((module, node.name))
    return found


def test_the_classes_are_every_frozen_one() -> None:
    assert all(issubclass(cls, Frozen) for cls in FROZEN)
    assert not any(dataclasses.is_dataclass(cls) for cls in PLAIN)
    assert len(FROZEN) == len(set(FROZEN)) == 29
    assert {(cls.__module__, cls.__qualname__) for cls in FROZEN} == _declared_frozen()


def test_mypy_reports_each_assignment_to_a_frozen_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, expected = _assignments(FROZEN)
    checked = tmp_path / "assigns_frozen_fields.py"
    checked.write_text(source)
    monkeypatch.chdir(ROOT)  # the configuration's paths, and its cache

    report, errors, status = api.run([str(checked), "--config-file", str(ROOT / "pyproject.toml")])

    found = {
        int(line_number): message
        for line_number, message in re.findall(r"^.*?:(\d+): error: (.*?)  \[misc\]$", report, re.MULTILINE)
    }
    assert errors == ""
    assert found == expected, report
    assert report.count(": error:") == len(expected), report
    assert status == 1
