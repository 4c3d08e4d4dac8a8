"""``intentbus init DIR``: a new project of one's own workflows on intentbus, in a new directory.

The project: ``template.yaml`` (project_template: the seed template with the project's workflow
module, its table and a layer built from the installed intentbus), the stage functions (the seed's thin
handlers), ``orders.py`` (the workflow, with a tool writing to the template's OrdersTable),
``events/sample.jsonl``, ``tests/``, ``layer/Makefile``, ``Makefile`` (demo, test, build),
``pyproject.toml`` (intentbus by name and version range) and a README.
"""

from __future__ import annotations

import argparse
import re
import shutil
from importlib import metadata
from pathlib import Path
from typing import TypeVar

from intentbus.errors import ConfigurationError

SCAFFOLD = Path(__file__).resolve().parent / "scaffold"
WORKFLOW_MODULE = "orders"
RENAMED = {"gitignore": ".gitignore", "pyproject.toml.in": "pyproject.toml"}
"""Scaffold files named otherwise in the project (a dotfile would be left out of the package; a
pyproject.toml with placeholders is not one to lint)."""
FILLED = ("pyproject.toml.in", "README.md")
"""Scaffold files with ``__PROJECT__`` and ``__INTENTBUS_REQUIREMENT__`` to fill in."""

_P = TypeVar("_P", bound=argparse.ArgumentParser)


def add_parser(commands: argparse._SubParsersAction[_P]) -> None:
    init = commands.add_parser(
        "init", help="a new project in a new directory: template, functions, a workflow, tests, Makefile"
    )
    init.add_argument("directory", type=Path, help="where to create it (new or empty)")


def run(args: argparse.Namespace) -> int:
    target: Path = args.directory
    create(target)
    print(f"created {target}/ ({project_name(target)}): cd {target} && make demo && make test")
    return 0


def create(target: Path) -> None:
    """Writes the project into ``target``, which must not exist or be empty."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigurationError(f"{target} exists and is not empty: init writes into a new directory only")
    from intentbus_local.template import SEED_PROJECT

    name = project_name(target)
    target.mkdir(parents=True, exist_ok=True)
    for source in sorted(SCAFFOLD.rglob("*")):
        if source.is_dir() or "__pycache__" in source.parts:
            continue
        relative = source.relative_to(SCAFFOLD)
        destination = target / relative.parent / RENAMED.get(relative.name, relative.name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        if relative.name in FILLED:
            text = text.replace("__PROJECT__", name).replace("__INTENTBUS_REQUIREMENT__", requirement())
        destination.write_text(text, encoding="utf-8")
    for handler in sorted((SEED_PROJECT / "functions").glob("*/app.py")):
        function_dir = target / "functions" / handler.parent.name
        function_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(handler, function_dir / "app.py")
    from intentbus_cli.project_template import project_template

    seed = (SEED_PROJECT / "template.yaml").read_text(encoding="utf-8")
    (target / "template.yaml").write_text(project_template(seed, workflows=WORKFLOW_MODULE), encoding="utf-8")


def project_name(target: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", target.resolve().name).strip("-._")
    return name or "intentbus-project"


def requirement() -> str:
    """``intentbus[local]`` from this version up to the next minor (the next major from 1.0)."""
    version = metadata.version("intentbus")
    parts = [int(part) for part in re.findall(r"\d+", version)[:2]] + [0, 0]
    major, minor = parts[0], parts[1]
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f"intentbus[local]>={version},<{upper}"
