"""A test-only workflow whose every fact carries a producer's text, as large as the limits let it be.

``NoteFiled`` (a note's text, unbounded by its model) makes the scribe propose ``store_note`` with the
same text, the rationale and evidence as large as the limits allow when ``loud`` is set; the tool
returns the text back when ``echo`` is set (a result over its bound); the run ends with ``NoteStored``,
a domain event that carries the text once more. Register: ``tests.large_workflow``.
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
    StepResults,
    ToolContext,
    ToolEffect,
    Workflow,
    tool,
)
from intentbus.limits import MAX_EVIDENCE_BYTES, MAX_RATIONALE_CHARS
from intentbus.policy import Effect, Policy, Rule
from intentbus.registry import Payload

WORKFLOWS = "tests.large_workflow"
FILED, STORED = "NoteFiled", "NoteStored"


class NoteFiled(Payload):
    note_id: str
    text: str
    echo: bool = False
    loud: bool = False
    """The scribe's rationale and evidence as large as the limits allow."""
    pad_rationale: int = 0
    """A rationale of this many characters instead (an agent padding it past its bound)."""


class StoreNote(Payload):
    note_id: str
    text: str
    echo: bool = False


class NoteStored(Payload):
    note_id: str
    chars: int
    text: str


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.WRITES)
def store_note(command: StoreNote, context: ToolContext) -> Mapping[str, Any]:
    result: dict[str, Any] = {"note_id": command.note_id, "chars": len(command.text)}
    if command.echo:
        result["text"] = command.text
    return result


def _store(context: DecisionContext) -> Decision:
    event = context.event
    assert isinstance(event, NoteFiled)
    evidence: dict[str, Any] = {"chars": len(event.text)}
    rationale = "store the note as filed"
    if event.loud:
        evidence = {"said": "e" * (MAX_EVIDENCE_BYTES - 20)}
        rationale = "r" * MAX_RATIONALE_CHARS
    if event.pad_rationale:
        rationale = "r" * event.pad_rationale
    return Decision(
        agent="scribe",
        rationale=rationale,
        evidence=evidence,
        confidence=1.0,
        commands=(
            ProposedCommand(
                type="store_note",
                payload={"note_id": event.note_id, "text": event.text, "echo": event.echo},
            ),
        ),
    )


def _stored(results: StepResults) -> Mapping[str, Any]:
    (result,) = results.values()
    chars = int(result.get("chars", result.get("result_bytes", 0)))
    return {"note_id": str(result.get("note_id", "?")), "chars": chars, "text": str(result.get("text", ""))}


workflow = Workflow(
    name="notes",
    version="1",
    policy=Policy(rules=(Rule(id="store", command="store_note", effect=Effect.ALLOW),)),
)
workflow.event(FILED, NoteFiled, starts=True)
workflow.event(STORED, NoteStored)
workflow.command("store_note", StoreNote, tool=store_note)
workflow.step(
    Step(
        on=FILED,
        agent=ScriptedAgent("scribe", _store),
        outcome=STORED,
        final=True,
        outcome_payload=_stored,
    )
)
