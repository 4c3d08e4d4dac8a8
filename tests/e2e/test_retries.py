"""Repeated failures on the whole topology, on the virtual clock.

A CRM upsert throttled five times is retried on the default policy's schedule (the message's visibility,
set by execute), then its run pauses for review; a person retries it through ``intentbus review`` and the
run completes, the record upserted once. A tool that raises ``TypeError`` (a bug, not a throttle) ends in
review with its error on the queue's last receive, never silently in ExecuteDLQ. And a message that
reaches a DLQ all the same (here: the pause itself could not be written) is found by the dead-letter
sweep, which pauses its run and leaves the message in the DLQ.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from intentbus import facts
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.definition import RetryPolicy
from intentbus.journal import Outcome
from intentbus.state import Status, WorkflowState
from intentbus_cli.main import main
from intentbus_faults.retry_schedule import retries_keep_their_schedule
from intentbus_local.cloud import LocalCloud
from tests.botocore_calls import Call, CallLog, recording
from tests.e2e.targets import target_args

TENANT = "acme"
POLICY = RetryPolicy()
QUEUE_VISIBILITY_SECONDS = 180


@pytest.fixture
def person(cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch) -> LocalCloud:
    """The CLI's caller pointed at the local cloud (a region and fake credentials)."""
    for name, value in cloud.clients.handler_environment().items():
        monkeypatch.setenv(name, value)
    return cloud


def request(customer: str) -> dict[str, Any]:
    return {
        "id": f"crm-request-{customer}",
        "type": "TOOL_EXECUTION_REQUESTED",
        "source": "crm.example",
        "tenant_id": TENANT,
        "payload": {
            "tool_name": "crm_record_upsert",
            "parameters": {"customer_id": customer, "status": "qualified"},
        },
    }


def emit(cloud: LocalCloud, customer: str) -> None:
    event = request(customer)
    cloud.put_events([{"Source": "crm.example", "DetailType": event["type"], "Detail": json.dumps(event)}])


def review(cloud: LocalCloud, *args: str) -> int:
    return main(["review", *target_args(cloud), "--tenant", TENANT, *args])


def the_run(store: DynamoWorkflowStore) -> WorkflowState:
    (listed,) = store.runs(TENANT)
    found = store.state(TENANT, listed.run_id)
    assert found is not None
    return found


def the_pause(store: DynamoWorkflowStore, run: WorkflowState) -> facts.HumanReviewRequired:
    paused = [e for e in store.entries(TENANT, run.run_id) if e.outcome is Outcome.PAUSED]
    (fact,) = paused[-1].outputs
    assert fact.type == facts.HUMAN_REVIEW_REQUIRED
    return facts.HumanReviewRequired.model_validate(fact.payload)


class CrmUpserts:
    """Every CRM UpdateItem the execute function makes, with its virtual time; the first ``failing``
    raise ``error``."""

    def __init__(self, cloud: LocalCloud, failing: int, error: Exception) -> None:
        self.cloud = cloud
        self.failing = failing
        self.error = error
        self.at: list[float] = []
        self._function = cloud.topology.functions["ExecuteFunction"].name
        self._table = cloud.topology.tables["CrmTable"]

    def __call__(self, call: Call) -> Exception | None:
        if (call.function, call.service, call.operation) != (self._function, "dynamodb", "UpdateItem"):
            return None
        if call.params.get("TableName") != self._table:
            return None
        self.at.append(self.cloud.clock.now())
        return self.error if len(self.at) <= self.failing else None


def receive_gaps(cloud: LocalCloud, queue: str) -> list[float]:
    """Virtual seconds between the receives of the queue's messages (the schedule SQS kept), from the
    poller's history: the tool's own call times would also count each invocation's (cold) start."""
    url = cloud.topology.queues[queue].url
    history = cloud.poller.history or []
    at = [delivered.at for delivered in history if delivered.queue_url == url]
    return [round(later - earlier, 1) for earlier, later in itertools.pairwise(at)]


@pytest.fixture
def throttled(person: LocalCloud) -> Iterator[CrmUpserts]:
    error = ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "UpdateItem")
    upserts = CrmUpserts(person, failing=POLICY.max_attempts, error=error)
    with recording(CallLog(), faults=(upserts,)):
        yield upserts


def test_a_throttled_tool_backs_off_then_a_person_retries_it_and_the_run_completes_once(
    throttled: CrmUpserts, store: DynamoWorkflowStore, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud = throttled.cloud
    cloud.poller.history = []
    emit(cloud, "cust_001")
    assert cloud.run_until_idle(max_invocations=100).idle

    # The default policy's schedule: min(900, 30 * 2**attempt) + up to 30 s of jitter, on the virtual clock.
    gaps = receive_gaps(cloud, "ExecuteQueue")
    with capsys.disabled():
        print(f"\nretry gaps (virtual s): {gaps}")
    assert len(throttled.at) == POLICY.max_attempts
    assert len(gaps) == POLICY.max_attempts - 1
    for attempt, gap in enumerate(gaps):
        floor = min(POLICY.cap_seconds, POLICY.base_seconds * 2**attempt)
        assert floor <= gap < floor + POLICY.base_seconds + 2, (attempt, gaps)

    assert retries_keep_their_schedule(cloud.poller.history, [POLICY]) == []
    run = the_run(store)
    assert run.status is Status.PAUSED
    fact = the_pause(store, run)
    assert (fact.limit, fact.stage, fact.attempts) == ("retries_exhausted", "execute", POLICY.max_attempts)
    assert fact.error is not None
    assert "ThrottlingException" in fact.error
    assert cloud.queue_depth("ExecuteDLQ") == (0, 0, 0)

    assert review(cloud, "list") == 0
    listed = capsys.readouterr().out
    assert run.run_id in listed
    assert "retries_exhausted" in listed
    assert "retry or cancel" in listed

    assert review(cloud, "retry", run.run_id, "--reason", "the CRM's rate limit was raised") == 0
    assert cloud.run_until_idle(max_invocations=100).idle

    done = the_run(store)
    assert done.status is Status.COMPLETED
    assert len(throttled.at) == POLICY.max_attempts + 1  # the retry ran the tool once more, and it worked
    entries = store.entries(TENANT, done.run_id)
    completed = [out for e in entries for out in e.outputs if out.type == facts.WORKFLOW_COMPLETED]
    assert len(completed) == 1
    retried = [out for e in entries for out in e.outputs if out.type == facts.RUN_RETRIED]
    assert [out.payload["stage"] for out in retried] == ["execute"]
    crm = cloud.clients.dynamodb().get_item(
        TableName=cloud.topology.tables["CrmTable"],
        Key={"tenant_id": {"S": TENANT}, "customer_id": {"S": "cust_001"}},
    )
    assert crm["Item"]["status"]["S"] == "qualified"


def test_a_tool_that_raises_a_type_error_ends_in_review_with_its_error_not_in_the_dlq(
    person: LocalCloud, store: DynamoWorkflowStore
) -> None:
    broken = CrmUpserts(person, failing=1000, error=TypeError("unsupported operand type(s) for +"))
    person.poller.history = []
    with recording(CallLog(), faults=(broken,)):
        emit(person, "cust_002")
        assert person.run_until_idle(max_invocations=100).idle

    max_receives = 5  # the template's MaxReceiveCount default
    assert len(broken.at) == max_receives
    # Not a retryable failure: no backoff of execute's own, the queue's visibility timeout between receives.
    gaps = receive_gaps(person, "ExecuteQueue")
    assert len(gaps) == max_receives - 1
    assert all(QUEUE_VISIBILITY_SECONDS <= gap < QUEUE_VISIBILITY_SECONDS + 2 for gap in gaps), gaps
    run = the_run(store)
    assert run.status is Status.PAUSED
    fact = the_pause(store, run)
    assert (fact.limit, fact.stage, fact.attempts) == ("last_receive", "execute", max_receives)
    assert fact.error == "TypeError: unsupported operand type(s) for +"
    assert person.queue_depth("ExecuteDLQ") == (0, 0, 0)

    assert review(person, "cancel", run.run_id, "--reason", "a bug in the tool; fixing it") == 0
    assert the_run(store).status is Status.CANCELLED


def test_a_message_that_slips_into_a_dlq_is_swept_into_review_and_left_there_to_redrive(
    person: LocalCloud, store: DynamoWorkflowStore
) -> None:
    execute = person.topology.functions["ExecuteFunction"].name
    broken = CrmUpserts(person, failing=1000, error=TypeError("a bug"))

    def pause_fails(call: Call) -> Exception | None:  # so the last receive cannot pause the run
        if (call.function, call.operation) == (execute, "TransactWriteItems"):
            return ClientError({"Error": {"Code": "InternalServerError", "Message": "down"}}, call.operation)
        return None

    with recording(CallLog(), faults=(broken, pause_fails)):
        emit(person, "cust_003")
        assert person.run_until_idle(max_invocations=100).idle
        person.clock.advance(600)  # the sweep's rate(5 minutes) comes round
        assert person.run_until_idle(max_invocations=100).idle

    run = the_run(store)
    assert run.status is Status.PAUSED
    fact = the_pause(store, run)
    assert (fact.limit, fact.stage, fact.attempts) == ("dead_lettered", "execute", 5)
    assert sum(person.queue_depth("ExecuteDLQ")) == 1  # read, never deleted: still there to redrive

    assert review(person, "retry", run.run_id, "--reason", "the tool is fixed") == 0
    assert person.run_until_idle(max_invocations=100).idle
    person.clock.advance(600)  # a later sweep leaves the retried run alone
    assert person.run_until_idle(max_invocations=100).idle
    assert the_run(store).status is Status.COMPLETED
