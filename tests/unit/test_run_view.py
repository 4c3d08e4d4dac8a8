"""The run view behind ``intentbus runs show``, and the tables the operator commands print."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

from intentbus.journal import LogEntry, Outcome
from intentbus_cli import run_view, tables
from intentbus_cli.runs import timeline_table

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def at(ms: int) -> datetime:
    return T0 + timedelta(milliseconds=ms)


ENTRIES = [
    LogEntry(
        stage="record",
        input_id="fact-1",
        input_type="CommandExecuted",
        outcome=Outcome.APPLIED,
        at=at(900),
        version=3,
        summary={"command_id": "cmd-1", "command_type": "reserve", "outcome_at": at(800).isoformat()},
    ),
    LogEntry(
        stage="validate",
        input_id="evt-1",
        input_type="OrderPlaced",
        outcome=Outcome.APPLIED,
        at=at(0),
        version=0,
        summary={"source": "shop.example", "kind": "event"},
    ),
    LogEntry(
        stage="decide",
        input_id="acc-1",
        input_type="OrderPlaced",
        outcome=Outcome.APPLIED,
        at=at(100),
        version=1,
        summary={"decision_id": "dec-1", "event_id": "evt-1", "decision": {"agent": "clerk"}},
    ),
    LogEntry(
        stage="authorize",
        input_id="prop-1",
        input_type="reserve",
        outcome=Outcome.WAITING,
        at=at(200),
        version=2,
        summary={"command_id": "cmd-1", "verdict": {"rule": "big-orders"}, "reason": "needs a person"},
    ),
    LogEntry(
        stage="approval",
        input_id="appr-1",
        input_type="reserve",
        outcome=Outcome.APPLIED,
        at=at(500),
        version=3,
        summary={"approver": "alice", "via": "cli", "command_id": "cmd-1", "reason": "fine"},
    ),
]


def test_the_timeline_is_in_time_order_with_kinds_actors_and_ids() -> None:
    view = run_view.build("acme", "run-1", None, ENTRIES)
    assert [(e.stage, e.kind.value, e.actor) for e in view.timeline] == [
        ("validate", "event", "shop.example"),
        ("decide", "decision", "agent:clerk"),
        ("authorize", "verdict", "policy:big-orders"),
        ("approval", "approval", "alice"),
        ("execute", "execution", "tool:reserve"),
        ("record", "outcome", "record"),
    ]
    assert [e.offset_ms for e in view.timeline] == [0, 100, 200, 500, 800, 900]
    assert view.timeline[1].ids == {"event_id": "evt-1", "decision_id": "dec-1"}
    assert view.timeline[3].ids == {"command_id": "cmd-1", "approval_id": "appr-1"}
    execution = view.timeline[4]
    assert (execution.outcome, execution.input_id) == ("executed", "cmd-1")
    assert [p.type for p in execution.published] == ["CommandExecuted"]
    assert view.status is None, "no state read: the log alone still tells the run"


def test_the_shipped_schema_is_the_models_schema() -> None:
    shipped = json.loads(run_view.SCHEMA_PATH.read_text())
    assert shipped == run_view.schema(), "regenerate it: python -m intentbus_cli.run_view"


def test_plain_tables_align_columns_and_rich_tables_keep_brackets_literal() -> None:
    headers, rows = timeline_table(run_view.build("acme", "run-1", None, ENTRIES))
    text = tables.plain(headers, rows)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["time", "t+ms", "stage"]
    assert set(lines[1]) <= {"-", " "}
    assert [line.split()[2] for line in lines[2:]] == [
        "validate",
        "decide",
        "authorize",
        "approval",
        "execute",
        "record",
    ]

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    tables.show(("name", "note [x]"), [("a", "[bold]literal[/bold]")], out=out)
    rendered = out.getvalue()
    assert "┃" in rendered
    assert "[bold]literal[/bold]" in rendered
    assert "note [x]" in rendered

    piped = io.StringIO()
    tables.show(("name",), [("a",)], title="t", out=piped)
    assert piped.getvalue() == "t\nname\n----\na\n"
