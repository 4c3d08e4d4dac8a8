"""Every dataclass in the intentbus package says what it is in a docstring.

Beyond the reader: ``dataclasses`` gives a class without a docstring one built from its signature
(``inspect.signature`` over every field's annotation), which takes about as long again as creating the
class, once per class at every import, and so at every cold start of every function."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "intentbus"


def _is_dataclass(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name == "dataclass"


def undocumented_dataclasses(source: str, filename: str) -> list[str]:
    tree = ast.parse(source, filename=filename)
    return [
        f"{filename}:{node.lineno} {node.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(_is_dataclass(decorator) for decorator in node.decorator_list)
        and ast.get_docstring(node) is None
    ]


def test_every_dataclass_in_the_package_has_a_docstring() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 30
    found = [
        undocumented
        for path in modules
        for undocumented in undocumented_dataclasses(path.read_text(), str(path.relative_to(PACKAGE)))
    ]
    assert found == []


def test_the_check_sees_each_way_of_declaring_a_dataclass() -> None:
    source = '''
import dataclasses
from dataclasses import dataclass

@dataclass
class Bare:
    a: int

@dataclass(frozen=True)
class Called:
    a: int

@dataclasses.dataclass(slots=True)
class Qualified:
    a: int

@dataclass(frozen=True)
class Documented:
    """What it is."""

    a: int

class Plain:
    a: int
'''
    assert undocumented_dataclasses(source, "probe.py") == [
        "probe.py:6 Bare",
        "probe.py:10 Called",
        "probe.py:14 Qualified",
    ]
