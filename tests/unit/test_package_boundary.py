"""The runtime (the layer: shared/intentbus, less intentbus.testing) imports nothing of the tooling.

Every import statement counts, the lazy ones inside functions too: a deployed function that reached
one would fail on Lambda, where the layer has no CLI, emulator or rich."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "shared" / "intentbus"
NOT_SHIPPED = RUNTIME / "testing"
TOOLING = ("intentbus_cli", "intentbus_local", "intentbus_build", "intentbus_faults", "intentbus.testing")
TOOLING_ONLY_DEPENDENCIES = ("rich", "moto", "samtranslator", "cfnlint", "pytest", "tests")


def imported_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def tooling_imports(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for line, name in imported_names(ast.parse(path.read_text(), filename=str(path))):
        top = name.split(".")[0]
        if top in TOOLING_ONLY_DEPENDENCIES or any(name == t or name.startswith(f"{t}.") for t in TOOLING):
            found.append(f"{path.relative_to(root)}:{line} imports {name}")
    return found


def runtime_modules() -> list[Path]:
    return sorted(p for p in RUNTIME.rglob("*.py") if NOT_SHIPPED not in p.parents)


def test_the_runtime_imports_nothing_of_the_tooling() -> None:
    assert len(runtime_modules()) > 30
    assert [found for path in runtime_modules() for found in tooling_imports(path)] == []


HANDLERS = sorted((ROOT / "functions").glob("*/app.py"))


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_no_function_imports_the_tooling(handler: Path) -> None:
    assert tooling_imports(handler) == []


def test_the_check_sees_a_lazy_import_of_the_cli(tmp_path: Path) -> None:
    """The checker itself: an import inside a function body is found."""
    module = tmp_path / "probe.py"
    module.write_text(
        "def later() -> None:\n    from intentbus_cli.main import main\n    import rich.table\n"
    )
    assert tooling_imports(module, tmp_path) == [
        "probe.py:2 imports intentbus_cli.main",
        "probe.py:2 imports intentbus_cli.main.main",
        "probe.py:3 imports rich.table",
    ]
