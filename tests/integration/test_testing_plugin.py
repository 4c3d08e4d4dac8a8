"""The pytest plugin outside this repo: a user's project (a workflow module, this repo's template with its
Workflows default changed, the functions) tests its workflow with intentbus_pipeline and intentbus_cloud.

pytest runs in a subprocess in the project's directory, as the user runs it: the plugin is found through
its entry point, and the workflow module imports only because the plugin puts the project on sys.path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED_WORKFLOWS = "Default: intentbus.workflows.incident,intentbus.workflows.direct_tool"

WORKFLOW = '''
"""A user's workflow: greeting someone needs a person's approval."""

from collections.abc import Mapping
from typing import Any

from intentbus.definition import (
    Decision, DecisionContext, ProposedCommand, RepeatSafety, ScriptedAgent, Step, ToolContext, Workflow,
    tool,
)
from intentbus.policy import Effect, Policy, Rule
from intentbus.registry import Payload

GREETED: list[str] = []


class GreetingRequested(Payload):
    name: str


class Greeted(Payload):
    greeting: str


class Greet(Payload):
    name: str


@tool(repeat_safety=RepeatSafety.SAFE)
def greet(command: Greet, context: ToolContext) -> Mapping[str, Any]:
    GREETED.append(command.name)
    return {"greeting": f"hello {command.name}"}


def _decide(context: DecisionContext) -> Decision:
    return Decision(
        agent="greeter", rationale="be polite", confidence=1.0,
        commands=(ProposedCommand(type="greet", payload={"name": context.event.name}),),
    )


workflow = Workflow(
    name="greetings",
    version="1",
    policy=Policy(
        rules=(Rule(id="greetings-need-approval", command="greet", effect=Effect.REQUIRE_APPROVAL),)
    ),
)
workflow.event("GreetingRequested", GreetingRequested, starts=True)
workflow.event("Greeted", Greeted)
workflow.command("greet", Greet, tool=greet)
workflow.step(
    Step(
        on="GreetingRequested", agent=ScriptedAgent("greeter", _decide), outcome="Greeted", final=True,
        outcome_payload=lambda results: next(iter(results.values())),
    )
)
'''

TESTS = """
from intentbus.state import Status

import greetings

REQUEST = {
    "id": "req-1", "tenant_id": "acme", "run_id": "run-1", "type": "GreetingRequested",
    "payload": {"name": "ada"},
}


def test_in_memory(intentbus_pipeline):
    intentbus_pipeline.emit(REQUEST)
    intentbus_pipeline.run_until_idle()
    (approval,) = intentbus_pipeline.pending_approvals("acme")
    intentbus_pipeline.approve(approval.approval_id, approver="alice")
    intentbus_pipeline.run_until_idle()
    assert intentbus_pipeline.state("acme", "run-1").status is Status.COMPLETED
    assert intentbus_pipeline.tool_runs == {"greet": 1}


def test_in_memory_quarantine(intentbus_pipeline):
    intentbus_pipeline.emit({**REQUEST, "payload": {}})
    intentbus_pipeline.run_until_idle()
    (refused,) = intentbus_pipeline.quarantined
    assert refused.field == "payload.name"


def test_on_the_local_cloud(intentbus_cloud):
    greetings.GREETED.clear()
    intentbus_cloud.emit(REQUEST)
    intentbus_cloud.run_until_idle()
    (approval,) = intentbus_cloud.pending_approvals("acme")
    assert intentbus_cloud.approve("acme", approval.approval_id, approver="alice").answer == "approved"
    intentbus_cloud.run_until_idle()
    assert intentbus_cloud.state("acme", "run-1").status is Status.COMPLETED
    assert greetings.GREETED == ["ada"]
    stages = [entry.stage for entry in intentbus_cloud.timeline("acme", "run-1")]
    assert stages[:3] == ["validate", "decide", "authorize"]
    validate = intentbus_cloud.cloud.topology.functions["ValidateFunction"]
    assert validate.environment["INTENTBUS_WORKFLOWS"] == "greetings"


def test_an_approval_expires_on_the_cloud_clock(intentbus_cloud):
    intentbus_cloud.emit(REQUEST)
    intentbus_cloud.run_until_idle()
    intentbus_cloud.clock.advance(5 * 3600)
    intentbus_cloud.run_until_idle()
    assert intentbus_cloud.pending_approvals("acme") == []
    assert intentbus_cloud.state("acme", "run-1").status is Status.DENIED
"""


def make_project(
    directory: Path, *, template_at: str = "template.yaml", workflows: str = "greetings"
) -> Path:
    template = (ROOT / "template.yaml").read_text(encoding="utf-8")
    assert SEED_WORKFLOWS in template
    (directory / template_at).parent.mkdir(parents=True, exist_ok=True)
    (directory / template_at).write_text(template.replace(SEED_WORKFLOWS, f"Default: {workflows}"))
    shutil.copytree(ROOT / "functions", directory / Path(template_at).parent / "functions")
    (directory / "greetings.py").write_text(WORKFLOW)
    (directory / "tests").mkdir()
    return directory


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_project_tests_its_workflow_in_memory_and_on_the_local_cloud(tmp_path: Path) -> None:
    project = make_project(tmp_path / "shop")
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "tests" / "test_greetings.py").write_text(textwrap.dedent(TESTS))

    done = run_pytest(project)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout


def test_the_ini_options_name_another_template_and_the_workflows(tmp_path: Path) -> None:
    project = make_project(tmp_path / "shop", template_at="deploy/stack.yaml", workflows="nothing.here")
    (project / "pytest.ini").write_text(
        "[pytest]\nintentbus_template = deploy/stack.yaml\nintentbus_workflows = greetings\n"
    )
    (project / "tests" / "test_greetings.py").write_text(
        textwrap.dedent(TESTS).split("\n\ndef test_on_the_local_cloud")[0]
    )
    (project / "tests" / "test_project.py").write_text(
        "def test_project(intentbus_project):\n"
        "    assert intentbus_project.template.parts[-2:] == ('deploy', 'stack.yaml')\n"
        "    assert intentbus_project.workflows == 'greetings'\n"
    )

    done = run_pytest(project)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_a_workflow_module_that_does_not_import_fails_in_one_line(tmp_path: Path) -> None:
    project = make_project(tmp_path / "shop", workflows="greetingz")
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "tests" / "test_greetings.py").write_text(
        "def test_in_memory(intentbus_pipeline):\n    pass\n"
    )

    done = run_pytest(project)

    assert done.returncode == 1
    assert "intentbus_pipeline: cannot import workflow module 'greetingz'" in done.stdout
    assert "Traceback" not in done.stdout
