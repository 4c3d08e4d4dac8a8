"""A project of one's own: ``intentbus init``, then the CLI on its template and its workflow modules."""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intentbus_cli.init import create, requirement
from intentbus_cli.main import _parser, main
from intentbus_cli.project import resolve
from intentbus_local.template import SEED_PROJECT

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("projects") / "my-app"
    create(project)
    return project


@pytest.fixture
def project(made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy, with sys.path and the imported workflow modules restored afterwards."""
    copy = shutil.copytree(made, tmp_path / "my-app")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("INTENTBUS_WORKFLOWS", raising=False)
    for name in ("orders", "shop_orders"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return copy


def test_local_run_in_the_project_runs_its_workflow_from_the_template_default(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    assert main(["local", "run", "--events", "events/sample.jsonl"]) == 0
    out = capsys.readouterr().out
    assert "(orders): COMPLETED" in out
    assert "(orders): DENIED — quantity=500 is above the maximum 10" in out


def test_local_run_with_workflows_runs_the_users_module_from_the_templates_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: INTENTBUS_WORKFLOWS was ignored by local run, the user's inputs quarantined as unknown."""
    (project / "shop_orders.py").write_text((project / "orders.py").read_text())
    template, events = str(project / "template.yaml"), str(project / "events" / "sample.jsonl")
    elsewhere = project.parent / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the template's folder goes on sys.path, not the working directory's

    assert (
        main(["local", "run", "--events", events, "--template", template, "--workflows", "shop_orders"]) == 0
    )
    assert "(orders): COMPLETED" in capsys.readouterr().out


def test_the_workflows_are_the_flag_else_the_variable_else_the_templates_default(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = project / "template.yaml"
    assert resolve(template, None).workflows == "orders"
    monkeypatch.setenv("INTENTBUS_WORKFLOWS", "shop_orders:workflow")
    assert resolve(template, None).workflows == "shop_orders:workflow"
    assert resolve(template, "a,b").workflows == "a,b"  # replaces the template's list
    assert str(project) == sys.path[0]
    monkeypatch.chdir(project.parent)
    seeded = resolve(None, "a")
    assert seeded.seeded
    assert seeded.template == SEED_PROJECT / "template.yaml"


def test_a_missing_template_or_module_is_one_line(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    assert main(["local", "run", "--events", "events/sample.jsonl", "--template", "nope.yaml"]) == 3
    assert capsys.readouterr().err == "intentbus: no template at nope.yaml\n"
    assert main(["schema", "export", "--workflows", "no_such_module"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("intentbus: cannot import workflow module 'no_such_module'")
    assert err.count("\n") == 1


def test_init_refuses_a_directory_that_is_not_empty(made: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(made)]) == 3
    assert capsys.readouterr().err == (
        f"intentbus: {made} exists and is not empty: init writes into a new directory only\n"
    )


def test_the_project_template_passes_cfn_lint_and_declares_the_orders_tool(made: Path) -> None:
    lint = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), str(made / "template.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    text = (made / "template.yaml").read_text()
    assert "    Default: orders\n" in text
    assert "      ContentUri: layer/\n" in text
    assert "ORDERS_TABLE: !Ref OrdersTable" in text
    assert "Resource: !GetAtt OrdersTable.Arn" in text


def test_the_project_installs_intentbus_by_name_and_range(made: Path) -> None:
    pyproject = (made / "pyproject.toml").read_text()
    assert f'"{requirement()}"' in pyproject
    assert requirement().startswith("intentbus[local]>=")
    assert (made / ".gitignore").is_file()
    assert sorted(p.parent.name for p in (made / "functions").glob("*/app.py")) == sorted(
        p.parent.name for p in (REPO / "functions").glob("*/app.py")
    )


def test_the_shipped_seed_project_is_the_repos_template_and_functions() -> None:
    assert filecmp.cmp(SEED_PROJECT / "template.yaml", REPO / "template.yaml", shallow=False)
    handlers = sorted((REPO / "functions").glob("*/app.py"))
    assert handlers
    for handler in handlers:
        shipped = SEED_PROJECT / "functions" / handler.parent.name / "app.py"
        assert filecmp.cmp(shipped, handler, shallow=False), shipped


def test_every_command_takes_template_and_workflows() -> None:
    def leaves(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, argparse.ArgumentParser]]:
        children = [
            (name, child)
            for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, child in action.choices.items()
        ]
        if not children:
            return [(path, parser)]
        return [leaf for name, child in children for leaf in leaves(child, f"{path} {name}")]

    found = [(path, parser) for path, parser in leaves(_parser(), "intentbus") if path != "intentbus init"]
    assert len(found) > 20
    for path, parser in found:
        assert {"--template", "--workflows"} <= set(parser._option_string_actions), path
