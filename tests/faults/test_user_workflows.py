"""``intentbus faults`` over a user's own workflow module (in a directory of its own, not in intentbus):
what must happen at most once comes from the tools' declarations, and a broken workflow fails the
command with the seed that shows it and how to replay it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from intentbus.catalog import Catalog
from intentbus.definition import ToolEffect
from intentbus.errors import ConfigurationError
from intentbus_cli.main import main
from intentbus_faults.examples import drive_for
from intentbus_faults.invariants import declared_effects
from intentbus_faults.schedule import KINDS, example_input

NOTES = '''
"""A user's notes workflow: SaveNote writes a note, CountNotes reads it; both sent directly."""

from typing import Any

from intentbus.definition import RepeatSafety, Step, ToolEffect, Workflow, tool
from intentbus.policy import Effect, Policy, Rule
from intentbus.registry import Payload


class SaveNote(Payload):
    note_id: str
    text: str


class CountNotes(Payload):
    note_id: str


class Done(Payload):
    result: dict[str, Any]


def _key(context, note_id):
    return {{"tenant_id": {{"S": context.tenant_id}}, "customer_id": {{"S": "note-" + note_id}}}}


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.WRITES)
def save_note(command, context):
    context.clients.client("dynamodb").put_item(
        TableName=context.setting("CRM_TABLE"),
        Item={{**_key(context, command.note_id), "text": {{"S": command.text}}}},
    )
    return {{"saved": command.note_id}}


@tool(repeat_safety=RepeatSafety.SAFE{reader_effect})
def count_notes(command, context):
    ddb = context.clients.client("dynamodb")
    found = ddb.get_item(TableName=context.setting("CRM_TABLE"), Key=_key(context, command.note_id))
    if {reader_writes}:
        item = {{**_key(context, "counted"), "n": {{"N": "1"}}}}
        ddb.put_item(TableName=context.setting("CRM_TABLE"), Item=item)
    return {{"found": "Item" in found}}


workflow = Workflow(
    name="notes",
    version="1",
    policy=Policy(
        rules=(
            Rule(id="save", command="SaveNote", effect=Effect.ALLOW, reason="notes are harmless"),
            Rule(id="count", command="CountNotes", effect=Effect.ALLOW, reason="reads only"),
        )
    ),
    examples=(
        {{"type": "SaveNote", "source": "notes.example", "tenant_id": "acme",
          "payload": {{"note_id": "n1", "text": "hello"}}}},
        {{"type": "CountNotes", "source": "notes.example", "tenant_id": "acme",
          "payload": {{"note_id": "n1"}}}},
    ),
)
workflow.command("SaveNote", SaveNote, tool=save_note, starts=True)
workflow.command("CountNotes", CountNotes, tool=count_notes, starts=True)
workflow.event("NoteDone", Done)
for name in ("SaveNote", "CountNotes"):
    workflow.step(
        Step(
            on=name,
            agent=None,
            outcome="NoteDone",
            final=True,
            outcome_payload=lambda results: {{"result": dict(next(iter(results.values())))}},
            tools=(name,),
        )
    )
'''


def _user_module(
    directory: Path, name: str, *, reader_effect: str = ", effect=ToolEffect.READ_ONLY", writes: bool = False
) -> str:
    source = NOTES.format(reader_effect=reader_effect, reader_writes=writes)
    (directory / f"{name}.py").write_text(textwrap.dedent(source))
    return name


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command puts the current directory first
    return tmp_path


def _faults(capsys: pytest.CaptureFixture[str], module: str, *extra: str) -> tuple[int, str]:
    code = main(["faults", "--workflows", module, "--schedules", "3", "--seed", "40", *extra])
    out, err = capsys.readouterr()
    return code, out + err


def test_a_users_workflow_keeps_every_invariant_under_faults(
    user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _user_module(user_dir, "notes_ok")

    code, out = _faults(capsys, module)

    assert code == 0, out
    assert "invariant violations: 0" in out
    assert "notes COMPLETED" in out, "the user's runs were driven and completed"
    assert "schedules run: 3" in out


def test_the_effect_to_check_comes_from_the_tools_declarations(user_dir: Path) -> None:
    sys.path.insert(0, str(user_dir))
    catalog = Catalog.from_modules(_user_module(user_dir, "notes_declared"))

    declared = declared_effects(catalog)

    assert declared == {"SaveNote": ToolEffect.WRITES, "CountNotes": ToolEffect.READ_ONLY}


def test_a_read_only_tool_that_writes_fails_the_command_with_the_seed_to_replay(
    user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _user_module(user_dir, "notes_lying", writes=True)

    code, out = _faults(capsys, module)

    assert code == 1, out
    assert "(a/read-only-wrote) CountNotes" in out
    assert "FAILED: seed 4" in out
    assert f"intentbus faults --workflows {module} --schedules 1 --seed 4" in out


def test_an_undeclared_tool_is_taken_to_write_and_must_take_effect_once(
    user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default is WRITES: a reader that forgot to say so is held to exactly one effect, and the
    violation says how to declare it."""
    module = _user_module(user_dir, "notes_undeclared", reader_effect="")

    code, out = _faults(capsys, module, "--kinds", "duplicate")

    assert code == 1, out
    assert "(a/completed-not-once)" in out
    assert "CountNotes took effect 0 times" in out
    assert "effect=ToolEffect.READ_ONLY" in out


def test_bad_arguments_get_one_line(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = _user_module(user_dir, "notes_args")
    (user_dir / "bad.jsonl").write_text('{"type": "Nope", "tenant_id": "acme", "payload": {}}\n')

    for argv, says in (
        (
            ["faults", "--workflows", module, "--schedules", "0"],
            "--schedules and --workers must be at least 1",
        ),
        (["faults", "--workflows", "no_such_module"], "cannot import workflow module 'no_such_module'"),
        (["faults", "--workflows", module, "--events", "bad.jsonl"], "type 'Nope' starts none"),
        (["faults", "--workflows", module, "--template", "missing.yaml"], "no template at missing.yaml"),
    ):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        assert code != 0
        lines = (out + err).strip().splitlines()
        assert len(lines) == 1, lines
        assert says in lines[0]


def test_redis_without_a_redis_server_is_one_line(
    user_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _user_module(user_dir, "notes_redis")
    monkeypatch.setenv("PATH", str(user_dir))  # no redis-server there

    with pytest.raises(SystemExit) as exit_:
        main(["faults", "--workflows", module, "--idempotency", "redis"])
    out, err = capsys.readouterr()

    assert exit_.value.code == 2
    (line,) = (out + err).strip().splitlines()
    assert "--idempotency redis needs redis-server on PATH" in line


def test_samples_come_from_the_definition_or_a_file_and_each_run_is_the_schedules_own(user_dir: Path) -> None:
    sys.path.insert(0, str(user_dir))
    catalog = Catalog.from_modules(_user_module(user_dir, "notes_samples"))
    catalog.workflow("notes").examples = ()
    sample = {"type": "SaveNote", "tenant_id": "acme", "idempotency_key": "k", "payload": {"note_id": "n"}}

    with pytest.raises(ConfigurationError, match="no sample input for workflow\\(s\\) notes"):
        drive_for(catalog)
    drive = drive_for(catalog, [("samples.jsonl:1", sample)])
    first, second = example_input(drive.examples[0], 7, 0), example_input(drive.examples[0], 8, 0)

    assert drive.examples[0].workflow == "notes"
    assert drive.sources == ["intentbus.cli"], "a sample without a source is sent as intentbus emit's"
    assert first.run is not None
    assert second.run is not None
    assert first.run.tenant_id == "acme", "the sample's tenant: its allow-lists and budgets apply"
    assert first.run.run_id != second.run.run_id
    assert first.envelope["idempotency_key"] != second.envelope["idempotency_key"]
    assert sample["idempotency_key"] == "k", "the sample itself is left as it was"


def test_the_help_names_every_fault_kind(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["faults", "--help"])

    shown = " ".join(capsys.readouterr().out.split())
    assert all(kind in shown for kind in KINDS), [kind for kind in KINDS if kind not in shown]


def test_redis_without_the_redis_client_is_one_line(
    user_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A project installed without the `redis` extra: the client package cannot be imported.
    module = _user_module(user_dir, "notes_redis_client")
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")

    with pytest.raises(SystemExit) as exit_:
        main(["faults", "--workflows", module, "--idempotency", "redis"])
    out, err = capsys.readouterr()

    assert exit_.value.code == 2
    (line,) = (out + err).strip().splitlines()
    assert "pip install 'intentbus[redis]'" in line


def test_the_harness_runs_on_dynamodb_without_the_redis_client() -> None:
    # What a project made by `intentbus init` installs: no `redis` package.
    blocked = "import sys; sys.modules['redis'] = None; import intentbus_faults.harness, intentbus_cli.faults"
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
