"""A run as ``intentbus runs show`` tells it: its state and a timeline built from its durable log.

Each log entry is one moment: the event validated, the agent's decision, the policy's verdict, a
person's approval, the outcome recorded; an execution has no entry of its own (execute's record is
the idempotency table), so it is told from record's entry, at the time the tool finished. The JSON
form is :class:`RunView`; ``run_view.schema.json`` beside this module is its JSON Schema (the tests
check it is current: regenerate with ``python -m intentbus_cli.run_view``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from intentbus.journal import LogEntry
from intentbus.state import WorkflowState

SCHEMA_PATH = Path(__file__).with_name("run_view.schema.json")
FORMAT: Final = "intentbus.run/1"

_EXECUTE_FACTS = {
    "CommandExecuted": "executed",
    "CommandFailed": "failed",
    "CommandOutcomeUnknown": "unknown",
}
_ID_KEYS = ("event_id", "decision_id", "command_id", "approval_id")


class Kind(StrEnum):
    EVENT = "event"
    DECISION = "decision"
    VERDICT = "verdict"
    APPROVAL = "approval"
    APPROVAL_ATTEMPT = "approval_attempt"
    EXECUTION = "execution"
    OUTCOME = "outcome"
    REVIEW = "review"
    REVIEW_ATTEMPT = "review_attempt"
    OTHER = "other"


_KIND_BY_STAGE = {
    "validate": Kind.EVENT,
    "decide": Kind.DECISION,
    "authorize": Kind.VERDICT,
    "approval": Kind.APPROVAL,
    "approval-attempt": Kind.APPROVAL_ATTEMPT,
    "execute": Kind.EXECUTION,
    "record": Kind.OUTCOME,
    "review": Kind.REVIEW,
    "review-attempt": Kind.REVIEW_ATTEMPT,
}
_PEOPLE = ("approver", "reviewer")


class Published(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str
    id: str


class TimelineEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    offset_ms: float = Field(ge=0, description="milliseconds since the run's first entry")
    stage: str
    kind: Kind
    type: str = Field(description="the event type, or the command type for verdicts and executions")
    outcome: str
    actor: str | None = Field(
        description="who acted: the event's source, the agent, the policy rule, the approver or reviewer, "
        "the tool"
    )
    input_id: str
    ids: dict[str, str] = Field(default_factory=dict, description="event, decision, command, approval ids")
    reason: str | None = None
    version: int = Field(ge=0, description="the run's version once this was written")
    published: list[Published] = Field(default_factory=list)


class RunView(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["intentbus.run/1"] = FORMAT
    tenant_id: str
    run_id: str
    workflow: str | None
    status: str | None
    version: int | None
    step_index: int | None
    started_at: datetime | None
    updated_at: datetime | None
    reason: str | None
    timeline: list[TimelineEvent]


def build(tenant_id: str, run_id: str, state: WorkflowState | None, entries: Sequence[LogEntry]) -> RunView:
    moments = sorted(
        (moment for entry in entries for moment in _moments(entry)), key=lambda moment: moment[0]
    )
    start = moments[0][0] if moments else None
    timeline = [
        event.model_copy(update={"offset_ms": round((at - start).total_seconds() * 1000, 3)})
        for at, event in moments
        if start is not None
    ]
    return RunView(
        tenant_id=tenant_id,
        run_id=run_id,
        workflow=state.workflow if state else None,
        status=state.status.value if state else None,
        version=state.version if state else None,
        step_index=state.step_index if state else None,
        started_at=state.started_at if state else None,
        updated_at=state.updated_at if state else None,
        reason=state.reason if state else None,
        timeline=timeline,
    )


def _moments(entry: LogEntry) -> list[tuple[datetime, TimelineEvent]]:
    summary = entry.summary
    ids = {key: str(summary[key]) for key in _ID_KEYS if summary.get(key)}
    if entry.stage == "approval":
        ids["approval_id"] = entry.input_id
    event = TimelineEvent(
        at=entry.at,
        offset_ms=0,
        stage=entry.stage,
        kind=_KIND_BY_STAGE.get(entry.stage, Kind.OTHER),
        type=entry.input_type,
        outcome=entry.outcome.value,
        actor=_actor(entry),
        input_id=entry.input_id,
        ids=ids,
        reason=_text(summary.get("reason")),
        version=entry.version,
        published=[Published(type=output.type, id=output.id) for output in entry.outputs],
    )
    moments = [(entry.at, event)]
    if entry.stage == "record" and entry.input_type in _EXECUTE_FACTS and "outcome_at" in summary:
        finished = datetime.fromisoformat(str(summary["outcome_at"]))
        command_type = str(summary.get("command_type", "?"))
        execution = TimelineEvent(
            at=finished,
            offset_ms=0,
            stage="execute",
            kind=Kind.EXECUTION,
            type=command_type,
            outcome=_EXECUTE_FACTS[entry.input_type],
            actor=f"tool:{command_type}",
            input_id=str(summary.get("command_id", "")),
            ids={key: value for key, value in ids.items() if key == "command_id"},
            reason=_text(summary.get("reason")) if entry.input_type != "CommandExecuted" else None,
            version=max(entry.version - 1, 0),
            published=[Published(type=entry.input_type, id=entry.input_id)],
        )
        moments.insert(0, (finished, execution))
    return moments


def _actor(entry: LogEntry) -> str | None:
    summary: Mapping[str, Any] = entry.summary
    if entry.stage == "validate":
        return _text(summary.get("source"))
    if entry.stage == "decide":
        decision = summary.get("decision")
        if isinstance(decision, Mapping) and decision.get("agent"):
            return f"agent:{decision['agent']}"
        return "budget" if "limit" in summary else None
    if entry.stage == "authorize":
        verdict = summary.get("verdict")
        if isinstance(verdict, Mapping) and verdict.get("rule"):
            return f"policy:{verdict['rule']}"
        return "policy"
    if entry.stage in ("approval", "approval-attempt"):
        return _text(summary.get("approver")) or "expiry sweep"
    if entry.stage == "record":
        return "record"
    return next((str(summary[key]) for key in _PEOPLE if summary.get(key)), None)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def schema() -> dict[str, Any]:
    return RunView.model_json_schema(mode="serialization")


def schema_text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_PATH
    target.write_text(schema_text())
    print(f"wrote {target}")
