"""Budgets on the whole topology: a ping-pong stopped at its depth limit, resumed and cancelled by a person.

The test-only workflows (tests/pingpong_workflow.py) are registered through the template's
``Workflows`` parameter, like any user's; the person acts through ``intentbus review``.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from intentbus import facts
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.journal import LogEntry, Outcome
from intentbus.state import Status, WorkflowState
from intentbus_cli.main import main
from intentbus_local.cloud import LocalCloud
from intentbus_local.http_front import ApiDispatcher, LocalUser
from tests import pingpong_workflow
from tests.e2e.targets import target_args

TENANT = "acme"
RUN = "run-rally"
STEP = ["decide", "authorize", "record"]
"""A step's entries; an outcome event goes from record straight to decide (validate saw the first input)."""
LIMIT = pingpong_workflow.MAX_DEPTH
TOKENS = pingpong_workflow.TOKENS_PER_CALL


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCloud]:
    """The conftest's cloud, with the test workflows deployed (and the CLI's caller pointed at it)."""
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    pingpong_workflow.agent_calls.clear()
    with LocalCloud(
        mode="server", logs_dir=tmp_path / "logs", parameters={"Workflows": pingpong_workflow.WORKFLOWS}
    ) as running:
        for name, value in running.clients.handler_environment().items():
            monkeypatch.setenv(name, value)
        yield running


def emit(cloud: LocalCloud, type_name: str, payload: dict[str, int], *, run_id: str = RUN) -> None:
    envelope = {
        "id": f"evt-{run_id}",
        "tenant_id": TENANT,
        "run_id": run_id,
        "type": type_name,
        "payload": payload,
    }
    cloud.put_events([{"Source": "tests.example", "DetailType": type_name, "Detail": json.dumps(envelope)}])
    assert cloud.run_until_idle(max_invocations=200).idle


def review(cloud: LocalCloud, *args: str) -> int:
    """The CLI as a person runs it: no ``--workflows``, no PYTHONPATH to the test workflows. The run's
    pause carries the budget it was paused under, which is all a resume needs."""
    return main(["review", *target_args(cloud), "--tenant", TENANT, *args])


def state_of(store: DynamoWorkflowStore, run_id: str = RUN) -> WorkflowState:
    found = store.state(TENANT, run_id)
    assert found is not None
    return found


def reviews(store: DynamoWorkflowStore) -> list[LogEntry]:
    return [entry for entry in store.entries(TENANT, RUN) if entry.stage == "review"]


def stopped_at_the_depth_limit(store: DynamoWorkflowStore) -> WorkflowState:
    """The run's final state, log, HumanReviewRequired and recorded spend once the rally was stopped."""
    decided = LIMIT + 1
    paused = state_of(store)
    assert paused.status is Status.PAUSED
    assert paused.reason == f"causation depth {decided} is over the limit {LIMIT}"
    assert (paused.steps_taken, paused.tokens_used) == (decided, decided * TOKENS)
    entries = store.entries(TENANT, RUN)
    assert [(e.stage, e.outcome) for e in entries] == [
        ("validate", Outcome.APPLIED),
        *[(stage, Outcome.APPLIED) for _ in range(decided) for stage in STEP],
        ("decide", Outcome.PAUSED),
    ]
    pause = entries[-1]
    spend = {"depth": decided, "steps": decided, "tokens": decided * TOKENS}
    (fact,) = pause.outputs
    assert fact.type == facts.HUMAN_REVIEW_REQUIRED
    assert fact.payload["limit"] == "depth"
    assert fact.payload["reason"] == paused.reason
    assert {name: fact.payload["spend"][name] for name in spend} == spend
    assert {name: pause.summary["spend"][name] for name in spend} == spend
    assert len(pingpong_workflow.agent_calls) == decided
    return paused


def resumed_to_the_raised_limit(store: DynamoWorkflowStore) -> WorkflowState:
    """The paused Pong was decided, once, and the rally went on to the raised limit."""
    again = state_of(store)
    assert (again.status, again.reason) == (
        Status.PAUSED,
        f"causation depth {LIMIT + 3} is over the limit {LIMIT + 2}",
    )
    assert (again.steps_taken, again.tokens_used) == (LIMIT + 3, (LIMIT + 3) * TOKENS)
    assert len(pingpong_workflow.agent_calls) == LIMIT + 3
    (resumed,) = reviews(store)
    assert str(resumed.summary["reviewer"]).startswith("arn:aws:sts::")
    assert resumed.summary["note"] == "one more rally"
    accepted_id = resumed.summary["accepted_id"]
    decisions = [e for e in store.entries(TENANT, RUN) if e.stage == "decide" and e.input_id == accepted_id]
    assert [e.outcome for e in decisions] == [Outcome.APPLIED], "the paused input, decided exactly once"
    return again


def cancelled_with_who_and_why(store: DynamoWorkflowStore, was: WorkflowState) -> WorkflowState:
    cancelled = state_of(store)
    assert cancelled.status is Status.CANCELLED
    assert cancelled.version == was.version + 1
    assert str(cancelled.reason).endswith(": they will never stop")
    entry = reviews(store)[-1]
    assert entry.summary["decision"] == "cancel"
    assert entry.summary["note"] == "they will never stop"
    assert str(entry.summary["reviewer"]).startswith("arn:aws:sts::")
    assert [e.type for e in entry.outputs] == [facts.RUN_CANCELLED]
    return cancelled


def test_ping_pong_stops_at_the_depth_limit_and_a_person_resumes_then_cancels_it(
    cloud: LocalCloud, store: DynamoWorkflowStore, capsys: pytest.CaptureFixture[str]
) -> None:
    emit(cloud, pingpong_workflow.PING, {"rally": 0})
    paused = stopped_at_the_depth_limit(store)

    # No more agent calls once paused: the serve sent again is a duplicate, nothing is in flight.
    emit(cloud, pingpong_workflow.PING, {"rally": 0})
    assert len(pingpong_workflow.agent_calls) == LIMIT + 1
    assert state_of(store) == paused

    assert review(cloud, "list") == 0
    listing = capsys.readouterr().out
    assert f"{RUN}  v{paused.version}  ping_pong  depth: {paused.reason}" in listing
    assert "1 paused run(s) for acme" in listing

    assert review(cloud, "resume", RUN, "--max-depth", str(LIMIT + 2), "--reason", "one more rally") == 0
    said = capsys.readouterr().out
    assert said.startswith("resumed (200): resumed by arn:aws:sts::")
    assert said.rstrip().endswith(": one more rally")
    assert cloud.run_until_idle(max_invocations=200).idle
    again = resumed_to_the_raised_limit(store)

    # The same pause resumed again: the same answer, no second resumption.
    version = str(paused.version)
    assert review(cloud, "resume", RUN, "--version", version, "--max-depth", "50", "--reason", "again") == 0
    assert capsys.readouterr().out.startswith("resumed (200): already resumed by arn:aws:sts::")
    assert cloud.run_until_idle(max_invocations=200).idle
    assert len(pingpong_workflow.agent_calls) == LIMIT + 3
    assert state_of(store) == again

    assert review(cloud, "cancel", RUN, "--reason", "they will never stop") == 0
    assert capsys.readouterr().out.startswith("cancelled (200): cancelled by arn:aws:sts::")
    assert cloud.run_until_idle(max_invocations=200).idle
    cancelled = cancelled_with_who_and_why(store, again)

    # Too late now: refused, nothing applied.
    assert review(cloud, "resume", RUN, "--max-depth", "50", "--reason", "too late") == 1
    assert capsys.readouterr().out.startswith(
        "conflict (409): the pause was already cancelled by arn:aws:sts::"
    )
    assert state_of(store) == cancelled
    assert len(pingpong_workflow.agent_calls) == LIMIT + 3
    assert review(cloud, "list") == 0
    assert "0 paused run(s) for acme" in capsys.readouterr().out


def test_a_run_paused_on_its_steps_finishes_once_resumed_with_more(
    cloud: LocalCloud, store: DynamoWorkflowStore, capsys: pytest.CaptureFixture[str]
) -> None:
    emit(cloud, "RelayStarted", {"leg": 0})
    paused = state_of(store)
    assert (paused.status, paused.reason) == (Status.PAUSED, "1 steps taken, the limit is 1")

    assert review(cloud, "resume", RUN, "--max-steps", "1", "--reason", "not enough") == 1
    assert capsys.readouterr().out.startswith(
        "insufficient (422): the raised budget would still be crossed: 1 steps taken, the limit is 1"
    )
    assert state_of(store) == paused

    assert review(cloud, "resume", RUN, "--max-steps", "2", "--reason", "let it finish") == 0
    assert cloud.run_until_idle(max_invocations=100).idle
    finished = state_of(store)
    assert (finished.status, finished.steps_taken) == (Status.COMPLETED, 2)
    assert pingpong_workflow.agent_calls == [f"runner:{RUN}:0", f"runner:{RUN}:1"]


def test_a_person_resumes_then_cancels_over_the_api(cloud: LocalCloud, store: DynamoWorkflowStore) -> None:
    """The review desk over REST, as an approver of the run's tenant: list, resume with raised limits,
    cancel; the reviewer recorded is the user's immutable sub."""
    emit(cloud, pingpong_workflow.PING, {"rally": 0})
    paused = stopped_at_the_depth_limit(store)
    ann = LocalUser(email="ann@acme.example", tenant_id=TENANT)
    api = ApiDispatcher(cloud.template, lambda fn, e: cloud.invoke(fn, e).response, ann, cloud.clock.now)

    def call(method: str, path: str, body: dict[str, object] | None = None) -> tuple[int, Any]:
        status, _, raw = api.handle(
            method, f"/v1/tenants/{TENANT}/reviews{path}", {}, json.dumps(body) if body else None, {}
        )
        return status, json.loads(raw)

    status, listing = call("GET", "")
    (item,) = listing["reviews"]
    assert status == 200
    assert (item["run_id"], item["version"], item["limit"], item["resumable"]) == (
        RUN,
        paused.version,
        "depth",
        True,
    )
    assert item["budget"]["max_depth"] == LIMIT
    body = {"reason": "one more rally", "version": paused.version, "max_depth": LIMIT + 2}
    status, answer = call("POST", f"/{RUN}/resume", body)
    assert (status, answer["answer"], answer["run"]["status"]) == (200, "resumed", "RUNNING")
    assert cloud.run_until_idle(max_invocations=200).idle
    again = state_of(store)
    assert again.status is Status.PAUSED
    (resumed,) = reviews(store)
    assert (resumed.summary["reviewer"], resumed.summary["reviewer_label"]) == (ann.subject, ann.email)
    status, answer = call("POST", f"/{RUN}/cancel", {"reason": "they will never stop"})
    assert (status, answer["answer"]) == (200, "cancelled")
    assert state_of(store).status is Status.CANCELLED
