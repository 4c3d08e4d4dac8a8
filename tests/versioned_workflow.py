"""A test-only workflow in two versions, for redeploys that change a workflow's version.

``v1`` and ``v2`` are the same ``publishing`` workflow, versions "1" and "2": a ``DraftReady`` makes the
editor propose ``publish``, which always needs a person's approval. Every run of the tool is appended
to ``published``. Register one of them: ``tests.versioned_workflow:v1`` (or ``:v2``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from intentbus.definition import (
    Decision,
    DecisionContext,
    ProposedCommand,
    RepeatSafety,
    ScriptedAgent,
    Step,
    ToolContext,
    ToolEffect,
    Workflow,
    tool,
)
from intentbus.policy import Effect, Policy, Rule
from intentbus.registry import Payload

MODULE = "tests.versioned_workflow"
published: list[str] = []


class DraftReady(Payload):
    draft: str


class Published(Payload):
    draft: str


class Publish(Payload):
    draft: str


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.WRITES)
def publish(command: Publish, context: ToolContext) -> Mapping[str, Any]:
    published.append(command.draft)
    return {"draft": command.draft}


def _propose(context: DecisionContext) -> Decision:
    event = context.event
    assert isinstance(event, DraftReady)
    return Decision(
        agent="editor",
        rationale="the draft reads well",
        confidence=0.9,
        commands=(ProposedCommand(type="publish", payload={"draft": event.draft}),),
    )


def build(version: str) -> Workflow:
    workflow = Workflow(
        name="publishing",
        version=version,
        policy=Policy(
            rules=(Rule(id="a-person-publishes", command="publish", effect=Effect.REQUIRE_APPROVAL),)
        ),
    )
    workflow.event("DraftReady", DraftReady, starts=True)
    workflow.event("Published", Published)
    workflow.command("publish", Publish, tool=publish)
    workflow.step(
        Step(on="DraftReady", agent=ScriptedAgent("editor", _propose), outcome="Published", final=True)
    )
    return workflow


v1 = build("1")
v2 = build("2")
