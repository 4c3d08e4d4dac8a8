"""The AWS adapters on moto in-process: the workflow store, the bus, the quarantine, idempotency, and
the direct-tool seed workflow through the five real stage cores and real adapters."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber

from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.adapters.eventbridge_bus import EventBridgeBus, backoff_seconds, to_entry
from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
from intentbus.adapters.sqs_quarantine import MAX_MESSAGE_BYTES, SqsQuarantine
from intentbus.approval_record import Approval
from intentbus.envelope import Envelope, Kind
from intentbus.errors import PublishError
from intentbus.execution_claim import Claim, ClaimStatus
from intentbus.journal import ApprovalStatus, Commit, CommitStatus, LogEntry, Outcome
from intentbus.ports import KeyHeldByAnotherCommand
from intentbus.state import Status, WorkflowState
from intentbus.testing import VirtualClock
from tests.fakes import raw_body
from tests.integration.conftest_moto import (
    CallLog,
    MotoPipeline,
    Resources,
    aws,  # noqa: F401  (fixture)
    client,
    create_idempotency_table,
    create_queue,
    create_workflow_table,
    drain,
    dynamodb_budget,
    lambda_context,
    resources,  # noqa: F401  (fixture)
    route_to_queue,
)

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
TENANT = "acme"
RUN = "run_store_1"
SEED_PATH = Path(__file__).resolve().parents[2] / "infra" / "events" / "seed_tool_call.json"


def envelope(
    id: str,
    *,
    type: str = "Probe",
    kind: Kind = Kind.EVENT,
    payload: dict[str, Any] | None = None,
    source: str = "test.publisher",
    idempotency_key: str | None = None,
    run_id: str = RUN,
) -> Envelope:
    return Envelope(
        id=id,
        source=source,
        type=type,
        time=T0,
        kind=kind,
        tenant_id=TENANT,
        trace_id="tr_1",
        run_id=run_id,
        step_index=1,
        correlation_id=run_id,
        idempotency_key=idempotency_key,
        payload={"n": 1} if payload is None else payload,
    )


def workflow_state(version: int, *, status: Status = Status.RUNNING, run_id: str = RUN) -> WorkflowState:
    return WorkflowState(
        tenant_id=TENANT,
        run_id=run_id,
        workflow="incident_response",
        definition_version="1",
        status=status,
        version=version,
        step_index=1,
        step_on="ServiceLatencyIncreased",
        pending=("cmd-1",),
        started_at=T0,
        updated_at=T0 + timedelta(seconds=version),
    )


def log_entry(
    stage: str,
    input_id: str,
    *,
    at: datetime = T0,
    version: int = 1,
    outputs: tuple[Envelope, ...] = (),
    outcome: Outcome = Outcome.APPLIED,
) -> LogEntry:
    return LogEntry(
        stage=stage,
        input_id=input_id,
        input_type="Probe",
        outcome=outcome,
        at=at,
        version=version,
        outputs=outputs,
        summary={"note": f"{stage} {input_id}"},
    )


# ================================================================== DynamoWorkflowStore


@dataclass
class StoreEnv:
    store: DynamoWorkflowStore
    client: Any
    log: CallLog
    table: str


@pytest.fixture
def store_env(aws: None) -> StoreEnv:  # noqa: F811
    dynamodb = client("dynamodb")
    table = create_workflow_table(dynamodb)
    log = CallLog().attach(dynamodb)
    return StoreEnv(DynamoWorkflowStore(table, dynamodb), dynamodb, log, table)


def _create(env: StoreEnv, entry: LogEntry, state: WorkflowState) -> None:
    result = env.store.commit(
        Commit(entry=entry, tenant_id=TENANT, run_id=RUN, expected_version=None, state=state, create=True)
    )
    assert result.status is CommitStatus.COMMITTED


def test_commit_create_then_snapshot_reads_state_and_entry_in_one_batch_get(store_env: StoreEnv) -> None:
    first = log_entry("decide", "in-1", outputs=(envelope("out-1"), envelope("out-2")))
    state = workflow_state(1)
    _create(store_env, first, state)
    store_env.log.clear()

    snapshot = store_env.store.snapshot(TENANT, RUN, "decide", "in-1")

    assert store_env.log.operations() == ["BatchGetItem"]
    assert snapshot.state == state
    assert snapshot.entry == first
    other = store_env.store.snapshot(TENANT, RUN, "decide", "in-2")
    assert other.state == state
    assert other.entry is None
    assert store_env.store.snapshot(TENANT, "run_other", "decide", "in-1").state is None


def _commit_shapes(entry: LogEntry) -> dict[str, Commit]:
    """The four shapes a commit takes, all on the run created at version 1."""
    return {
        "create": Commit(
            entry=entry,
            tenant_id=TENANT,
            run_id=RUN,
            expected_version=None,
            state=workflow_state(1),
            create=True,
        ),
        "update": Commit(
            entry=entry, tenant_id=TENANT, run_id=RUN, expected_version=1, state=workflow_state(2)
        ),
        "condition-check": Commit(entry=entry, tenant_id=TENANT, run_id=RUN, expected_version=1),
        "log-only": Commit(entry=entry, tenant_id=TENANT, run_id=RUN, expected_version=None),
    }


@pytest.mark.parametrize("shape", ["create", "update", "condition-check", "log-only"])
def test_second_commit_of_an_entry_returns_the_stored_entry(store_env: StoreEnv, shape: str) -> None:
    first = log_entry("decide", "in-1", outputs=(envelope("out-1"), envelope("out-2")))
    _create(store_env, first, workflow_state(1))
    # A redelivery that (wrongly) built different outputs must get the recorded ones back.
    replay = log_entry("decide", "in-1", at=T0 + timedelta(minutes=5), outputs=(envelope("out-new"),))

    result = store_env.store.commit(_commit_shapes(replay)[shape])

    assert result.status is CommitStatus.ALREADY_RECORDED
    assert result.entry == first
    assert result.entry is not None
    assert result.entry.outputs == first.outputs
    assert [output.id for output in result.entry.outputs] == ["out-1", "out-2"]
    assert store_env.store.state(TENANT, RUN) == workflow_state(1)
    assert store_env.store.entries(TENANT, RUN) == [first]


def test_stale_expected_version_conflicts_and_writes_nothing(store_env: StoreEnv) -> None:
    first = log_entry("decide", "in-1")
    _create(store_env, first, workflow_state(1))

    stale = Commit(
        entry=log_entry("record", "in-2", version=6),
        tenant_id=TENANT,
        run_id=RUN,
        expected_version=5,
        state=workflow_state(6, status=Status.COMPLETED),
    )
    assert store_env.store.commit(stale).status is CommitStatus.VERSION_CONFLICT

    # A create on a run that already exists is a conflict too.
    again = Commit(
        entry=log_entry("decide", "in-3"),
        tenant_id=TENANT,
        run_id=RUN,
        expected_version=None,
        state=workflow_state(1),
        create=True,
    )
    assert store_env.store.commit(again).status is CommitStatus.VERSION_CONFLICT

    assert store_env.store.state(TENANT, RUN) == workflow_state(1)
    assert store_env.store.entries(TENANT, RUN) == [first]
    assert store_env.store.snapshot(TENANT, RUN, "record", "in-2").entry is None


def test_version_checked_update_moves_the_state_on(store_env: StoreEnv) -> None:
    _create(store_env, log_entry("decide", "in-1"), workflow_state(1))
    second = log_entry("record", "in-2", at=T0 + timedelta(seconds=1), version=2)

    result = store_env.store.commit(
        Commit(entry=second, tenant_id=TENANT, run_id=RUN, expected_version=1, state=workflow_state(2))
    )

    assert result.status is CommitStatus.COMMITTED
    assert store_env.store.state(TENANT, RUN) == workflow_state(2)
    assert store_env.store.snapshot(TENANT, RUN, "record", "in-2").entry == second


def test_condition_check_only_commit_checks_the_version_without_writing_state(store_env: StoreEnv) -> None:
    _create(store_env, log_entry("decide", "in-1"), workflow_state(1))
    right = log_entry("authorize", "in-2")
    wrong = log_entry("authorize", "in-3")
    store_env.log.clear()

    ok = store_env.store.commit(Commit(entry=right, tenant_id=TENANT, run_id=RUN, expected_version=1))
    conflict = store_env.store.commit(Commit(entry=wrong, tenant_id=TENANT, run_id=RUN, expected_version=2))

    assert ok.status is CommitStatus.COMMITTED
    assert conflict.status is CommitStatus.VERSION_CONFLICT
    assert store_env.log.operations() == ["TransactWriteItems", "TransactWriteItems"]
    actions = [next(iter(action)) for action in store_env.log.calls[0].request["TransactItems"]]
    assert actions == ["Put", "ConditionCheck"]
    assert store_env.store.state(TENANT, RUN) == workflow_state(1)
    assert store_env.store.snapshot(TENANT, RUN, "authorize", "in-2").entry == right
    assert store_env.store.snapshot(TENANT, RUN, "authorize", "in-3").entry is None


def test_log_only_commit_costs_one_put_item(store_env: StoreEnv) -> None:
    entry = log_entry("validate", "evt-1", outputs=(envelope("accepted-1"),))

    result = store_env.store.commit(Commit(entry=entry, tenant_id=TENANT, run_id=RUN, expected_version=None))

    assert result.status is CommitStatus.COMMITTED
    assert store_env.log.operations() == ["PutItem"]
    assert store_env.store.snapshot(TENANT, RUN, "validate", "evt-1").entry == entry
    assert store_env.store.state(TENANT, RUN) is None


def _approval(approval_id: str, *, tenant_id: str = TENANT) -> Approval:
    command = envelope(
        "cmd-1",
        type="scale_service",
        kind=Kind.COMMAND,
        payload={"service": "checkout-api", "desired_count": 4},
        idempotency_key="idem_1",
    )
    return Approval(
        approval_id=approval_id,
        tenant_id=tenant_id,
        run_id=RUN,
        workflow="incident_response",
        command=command,
        proposed_at_version=1,
        proposed_by="operator",
        requested_at=T0,
        expires_at=T0 + timedelta(hours=4),
    )


def test_approval_commit_is_queryable_as_pending_for_the_tenant(store_env: StoreEnv) -> None:
    _create(store_env, log_entry("decide", "in-1"), workflow_state(1))
    approval = _approval("appr-1")

    result = store_env.store.commit(
        Commit(
            entry=log_entry("authorize", "in-2", outcome=Outcome.WAITING, version=2),
            tenant_id=TENANT,
            run_id=RUN,
            expected_version=1,
            state=workflow_state(2, status=Status.AWAITING_APPROVAL),
            approval=approval,
        )
    )
    assert result.status is CommitStatus.COMMITTED

    items = store_env.client.query(
        TableName=store_env.table,
        IndexName="gsi1",
        KeyConditionExpression="gsi1pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"T#{TENANT}#APPROVALS#PENDING"}},
    )["Items"]
    assert len(items) == 1
    assert Approval.model_validate_json(items[0]["approval"]["S"]) == approval
    assert items[0]["status"]["S"] == ApprovalStatus.PENDING.value
    assert int(items[0]["ttl"]["N"]) > int(approval.expires_at.timestamp())
    assert store_env.store.state(TENANT, RUN) == workflow_state(2, status=Status.AWAITING_APPROVAL)
    other_tenant = store_env.client.query(
        TableName=store_env.table,
        IndexName="gsi1",
        KeyConditionExpression="gsi1pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "T#other#APPROVALS#PENDING"}},
    )["Items"]
    assert other_tenant == []


def test_entries_come_back_in_time_order_not_key_order(store_env: StoreEnv) -> None:
    # Key order (sk) would be authorize, decide, record, validate; time order is the pipeline's.
    timeline = [("validate", 0), ("decide", 1), ("authorize", 2), ("record", 3)]
    entries = [log_entry(stage, f"in-{stage}", at=T0 + timedelta(seconds=s)) for stage, s in timeline]
    for entry in (entries[2], entries[0], entries[3], entries[1]):
        commit = Commit(entry=entry, tenant_id=TENANT, run_id=RUN, expected_version=None)
        assert store_env.store.commit(commit).status is CommitStatus.COMMITTED
    other_run = Commit(
        entry=log_entry("validate", "x"), tenant_id=TENANT, run_id="run_2", expected_version=None
    )
    store_env.store.commit(other_run)

    assert store_env.store.entries(TENANT, RUN) == entries


def test_the_guard_refuses_a_run_started_under_another_definition_of_its_workflow(
    store_env: StoreEnv,
) -> None:
    _create(store_env, log_entry("decide", "in-1"), workflow_state(1))
    guard = DynamoExecutionGuard(store_env.table, store_env.client)

    def claim(definition: tuple[str, str]) -> Claim:
        return guard.claim(
            tenant_id=TENANT,
            run_id=RUN,
            command_id="cmd-1",
            resource=None,
            seen_version=None,
            authorization=None,
            now=T0,
            definition=definition,
        )

    assert claim(("incident_response", "1")).status is ClaimStatus.CLAIMED
    for gone in (("incident_response", "2"), ("another_workflow", "1")):
        refused = claim(gone)
        assert (refused.status, refused.run_definition) == (ClaimStatus.RETIRED, ("incident_response", "1"))
    store_env.client.update_item(  # a run stored before definitions were stored
        TableName=store_env.table,
        Key={"pk": {"S": f"T#{TENANT}#WF#{RUN}"}, "sk": {"S": "STATE"}},
        UpdateExpression="REMOVE #definition",
        ExpressionAttributeNames={"#definition": "definition"},
    )
    assert claim(("incident_response", "2")).status is ClaimStatus.CLAIMED


# ================================================================== EventBridgeBus

BUS = "test-bus"


@dataclass
class BusEnv:
    client: Any
    log: CallLog
    queue_url: str
    sqs: Any


@pytest.fixture
def bus_env(aws: None) -> BusEnv:  # noqa: F811
    events = client("events")
    sqs = client("sqs")
    events.create_event_bus(Name=BUS)
    url, arn = create_queue(sqs, "test-sink")
    route_to_queue(
        events, bus=BUS, rule="from-publisher", pattern={"source": ["test.publisher"]}, queue_arn=arn
    )
    return BusEnv(events, CallLog().attach(events), url, sqs)


def test_publishes_23_envelopes_in_3_calls_and_all_arrive(bus_env: BusEnv) -> None:
    envelopes = [envelope(f"evt-{i:02d}", payload={"i": i}) for i in range(23)]

    EventBridgeBus(BUS, bus_env.client).publish(envelopes)

    calls = bus_env.log.of("events", "PutEvents")
    assert [len(call.request["Entries"]) for call in calls] == [10, 10, 3]
    arrived = [json.loads(message["Body"]) for message in drain(bus_env.sqs, bus_env.queue_url)]
    received = sorted((Envelope.model_validate(event["detail"]) for event in arrived), key=lambda e: e.id)
    assert received == envelopes
    assert {event["detail-type"] for event in arrived} == {"Probe"}


_OK = {"EventId": "ok"}
_FAILED = {"ErrorCode": "InternalFailure", "ErrorMessage": "try again"}


def _stubbed(events: Any) -> Stubber:
    return Stubber(events)


def test_only_failed_entries_are_resent_after_a_backoff(aws: None) -> None:  # noqa: F811
    events = client("events")
    envelopes = [envelope(f"evt-{i}") for i in range(5)]
    entries = [to_entry(item, BUS) for item in envelopes]
    sleeps: list[float] = []
    with _stubbed(events) as stub:
        stub.add_response(
            "put_events",
            {"FailedEntryCount": 2, "Entries": [_OK, _FAILED, _OK, _FAILED, _OK]},
            {"Entries": entries},
        )
        stub.add_response(
            "put_events",
            {"FailedEntryCount": 0, "Entries": [_OK, _OK]},
            {"Entries": [entries[1], entries[3]]},
        )

        EventBridgeBus(BUS, events, base_delay=0.05, max_delay=2.0, sleep=sleeps.append).publish(envelopes)

        stub.assert_no_pending_responses()
    assert len(sleeps) == 1
    assert 0.05 <= sleeps[0] <= 0.1


def test_entries_that_keep_failing_raise_after_max_attempts(aws: None) -> None:  # noqa: F811
    events = client("events")
    envelopes = [envelope(f"evt-{i:02d}") for i in range(12)]
    entries = [to_entry(item, BUS) for item in envelopes]
    sleeps: list[float] = []
    bus = EventBridgeBus(BUS, events, max_attempts=3, base_delay=0.05, max_delay=2.0, sleep=sleeps.append)
    with _stubbed(events) as stub:
        # The first batch of 10 goes through; the second batch's two entries never do.
        stub.add_response(
            "put_events", {"FailedEntryCount": 0, "Entries": [_OK] * 10}, {"Entries": entries[:10]}
        )
        for _ in range(3):
            stub.add_response(
                "put_events",
                {"FailedEntryCount": 2, "Entries": [_FAILED, _FAILED]},
                {"Entries": entries[10:]},
            )

        with pytest.raises(PublishError, match=r"2 entries not accepted after 3 attempts.*InternalFailure"):
            bus.publish(envelopes)

        stub.assert_no_pending_responses()
    assert len(sleeps) == 2
    assert 0.05 <= sleeps[0] <= 0.1
    assert 0.1 <= sleeps[1] <= 0.15


def test_a_failing_first_batch_stops_before_later_batches(aws: None) -> None:  # noqa: F811
    events = client("events")
    envelopes = [envelope(f"evt-{i:02d}") for i in range(12)]
    entries = [to_entry(item, BUS) for item in envelopes]
    bus = EventBridgeBus(BUS, events, max_attempts=2, sleep=lambda seconds: None)
    with _stubbed(events) as stub:
        stub.add_response(
            "put_events", {"FailedEntryCount": 1, "Entries": [_FAILED] + [_OK] * 9}, {"Entries": entries[:10]}
        )
        stub.add_response(
            "put_events", {"FailedEntryCount": 1, "Entries": [_FAILED]}, {"Entries": entries[:1]}
        )

        with pytest.raises(PublishError, match="1 entries not accepted after 2 attempts"):
            bus.publish(envelopes)

        stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [(0, 0.05), (1, 0.1), (2, 0.2), (3, 0.4), (5, 1.6), (6, 2.0), (10, 2.0)],
)
def test_backoff_is_capped_exponential_plus_jitter(attempt: int, expected: float) -> None:
    assert backoff_seconds(attempt, base=0.05, cap=2.0, jitter=lambda: 0.0) == pytest.approx(expected)
    assert backoff_seconds(attempt, base=0.05, cap=2.0, jitter=lambda: 1.0) == pytest.approx(expected + 0.05)
    for _ in range(20):
        assert expected <= backoff_seconds(attempt, base=0.05, cap=2.0) <= expected + 0.05


# ================================================================== SqsQuarantine


@dataclass
class QuarantineEnv:
    sqs: Any
    url: str
    clock: VirtualClock
    quarantine: SqsQuarantine


@pytest.fixture
def quarantine_env(aws: None) -> QuarantineEnv:  # noqa: F811
    sqs = client("sqs")
    url, _ = create_queue(sqs, "quarantine")
    clock = VirtualClock()
    return QuarantineEnv(sqs, url, clock, SqsQuarantine(url, sqs, clock))


def test_quarantined_message_carries_reason_field_body_and_fingerprint(quarantine_env: QuarantineEnv) -> None:
    body = '{"detail-type": "ServiceLatencyIncreased", "detail": {"payload": {"p99_ms": "slow"}}}'

    quarantine_env.quarantine.put(
        stage="validate",
        reason="payload.p99_ms: Input should be a valid number",
        field="payload.p99_ms",
        body=body,
        message_id="m-1",
    )

    (message,) = drain(quarantine_env.sqs, quarantine_env.url)
    record = json.loads(message["Body"])
    assert record["stage"] == "validate"
    assert record["reason"] == "payload.p99_ms: Input should be a valid number"
    assert record["field"] == "payload.p99_ms"
    assert record["body"] == body
    assert record["body_sha256"] == hashlib.sha256(body.encode()).hexdigest()
    assert record["body_bytes"] == len(body.encode())
    assert record["body_truncated"] is False
    assert record["source_message_id"] == "m-1"
    assert record["quarantined_at"] == quarantine_env.clock.now().isoformat()
    attributes = {name: value["StringValue"] for name, value in message["MessageAttributes"].items()}
    assert attributes == {"stage": "validate", "reason": "payload.p99_ms: Input should be a valid number"}


def test_a_body_over_200_kib_is_kept_truncated_with_its_true_size(quarantine_env: QuarantineEnv) -> None:
    body = "x" * (300 * 1024)

    quarantine_env.quarantine.put(stage="validate", reason="too big", field=None, body=body, message_id=None)

    (message,) = drain(quarantine_env.sqs, quarantine_env.url)
    record = json.loads(message["Body"])
    assert record["body_truncated"] is True
    assert len(message["Body"].encode()) <= MAX_MESSAGE_BYTES
    assert body.startswith(record["body"])
    assert len(record["body"]) > 200 * 1024
    assert record["body_bytes"] == 300 * 1024
    assert record["body_sha256"] == hashlib.sha256(body.encode()).hexdigest()
    assert record["field"] is None


def test_regression_non_ascii_quarantine_body_fits_the_sqs_limit(aws: None) -> None:  # noqa: F811
    sqs = client("sqs")
    url = sqs.create_queue(QueueName="quarantine-256k", Attributes={"MaximumMessageSize": str(256 * 1024)})[
        "QueueUrl"
    ]
    quarantine = SqsQuarantine(url, sqs, VirtualClock())
    body = "é" * (75 * 1024)  # 150 KiB of UTF-8: under the cut, kept whole

    quarantine.put(stage="validate", reason="body is not JSON", field=None, body=body, message_id="m-1")

    (message,) = drain(sqs, url)
    assert len(message["Body"].encode()) <= 256 * 1024
    assert json.loads(message["Body"])["body"] == body


# ================================================================== PowertoolsIdempotentRunner


@dataclass
class IdempotencyEnv:
    runner: PowertoolsIdempotentRunner
    client: Any
    table: str

    def records(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.client.scan(TableName=self.table, ConsistentRead=True)["Items"]
        return items


@pytest.fixture
def idempotency_env(aws: None, monkeypatch: pytest.MonkeyPatch) -> IdempotencyEnv:  # noqa: F811
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "intentbus-execute")
    dynamodb = client("dynamodb")
    table = create_idempotency_table(dynamodb)
    runner = PowertoolsIdempotentRunner(table, dynamodb, retention_seconds=3600)
    runner.bind(lambda_context())  # as the execute handler does before every batch
    return IdempotencyEnv(runner, dynamodb, table)


def command(id: str = "cmd-1", *, payload: dict[str, Any] | None = None, key: str = "idem_abc") -> Envelope:
    return envelope(
        id,
        type="scale_service",
        kind=Kind.COMMAND,
        payload={"service": "checkout-api", "desired_count": 4} if payload is None else payload,
        idempotency_key=key,
    )


def counting_work(calls: list[int], *, fail: bool = False) -> Callable[[], dict[str, Any]]:
    def work() -> dict[str, Any]:
        calls.append(1)
        if fail:
            raise ConnectionError("ECS timed out")
        return {"run": len(calls), "output_id": f"out-{len(calls)}"}

    return work


def test_work_runs_once_per_idempotency_key(idempotency_env: IdempotencyEnv) -> None:
    calls: list[int] = []
    runner = idempotency_env.runner

    first = runner.run(command(), counting_work(calls))
    second = runner.run(command(), counting_work(calls))
    # Same key and payload from a redelivered envelope with a new id: still the stored result.
    third = runner.run(command("cmd-redelivered"), counting_work(calls))

    assert calls == [1]
    assert first == {"run": 1, "output_id": "out-1"}
    assert second == first
    assert third == first
    (record,) = idempotency_env.records()
    assert record["status"]["S"] == "COMPLETED"
    assert record["id"]["S"].startswith("intentbus.execute#")


def test_same_key_with_a_different_payload_is_rejected(idempotency_env: IdempotencyEnv) -> None:
    calls: list[int] = []
    idempotency_env.runner.run(command(), counting_work(calls))

    with pytest.raises(KeyHeldByAnotherCommand):
        idempotency_env.runner.run(
            command(payload={"service": "checkout-api", "desired_count": 9}), counting_work(calls)
        )

    assert calls == [1]


def test_the_key_is_namespaced_by_tenant(idempotency_env: IdempotencyEnv) -> None:
    """Attack: another tenant sends a command with the victim's idempotency key first; the victim's
    command still runs, with its own record."""
    calls: list[int] = []
    intruder = command().model_copy(update={"tenant_id": "intruder", "payload": {"desired_count": 99}})
    idempotency_env.runner.run(intruder, counting_work(calls))
    idempotency_env.runner.run(command(), counting_work(calls))
    assert calls == [1, 1]


def test_work_that_raises_leaves_no_completed_record_and_runs_again(idempotency_env: IdempotencyEnv) -> None:
    calls: list[int] = []

    with pytest.raises(ConnectionError):
        idempotency_env.runner.run(command(), counting_work(calls, fail=True))
    assert [r for r in idempotency_env.records() if r["status"]["S"] == "COMPLETED"] == []

    result = idempotency_env.runner.run(command(), counting_work(calls))

    assert calls == [1, 1]
    assert result == {"run": 2, "output_id": "out-2"}


def test_bound_lambda_context_sets_the_in_progress_expiry(idempotency_env: IdempotencyEnv) -> None:
    idempotency_env.runner.bind(lambda_context(remaining_millis=30_000))
    seen: list[dict[str, Any]] = []

    def work() -> dict[str, Any]:
        seen.extend(idempotency_env.records())
        return {"ok": True}

    started_ms = time.time() * 1000
    assert idempotency_env.runner.run(command(), work) == {"ok": True}

    (in_progress,) = seen
    assert in_progress["status"]["S"] == "INPROGRESS"
    expiry_ms = int(in_progress["in_progress_expiration"]["N"])
    assert started_ms + 25_000 <= expiry_ms <= time.time() * 1000 + 30_000


# ================================================================== the direct-tool seed, for real


SEED_TENANT = "org_enterprise_alpha"
SEED_RUN = "run_01hx7a9e8v7p2m"


@pytest.fixture
def pipeline(resources: Resources) -> MotoPipeline:  # noqa: F811
    return MotoPipeline(resources)


def _seed_body(**parameters: str) -> str:
    seed = json.loads(SEED_PATH.read_text())
    seed["payload"]["parameters"].update(parameters)
    return raw_body(seed, detail_type=seed["event_type"], source="crm.example")


def _crm_item(customer_id: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = (
        client("dynamodb")
        .get_item(
            TableName="intentbus-crm",
            Key={"tenant_id": {"S": SEED_TENANT}, "customer_id": {"S": customer_id}},
            ConsistentRead=True,
        )
        .get("Item")
    )
    return item


def test_direct_tool_seed_runs_through_the_real_stages(pipeline: MotoPipeline) -> None:
    hops = pipeline.run(_seed_body())

    assert [(hop.stage, hop.outcome) for hop in hops] == [
        ("validate", "applied"),
        ("authorize", "applied"),
        ("execute", "applied"),
        ("record", "applied"),  # its ToolExecutionCompleted ends the run: sent to no stage
    ]
    item = _crm_item("cust_88219")
    assert item is not None
    assert item["status"]["S"] == "qualified"
    assert item["last_idempotency_key"]["S"] == "idem_8f3a01c9a4b2e67"
    state = pipeline.runtime.store.state(SEED_TENANT, SEED_RUN)
    assert state is not None
    assert state.status is Status.COMPLETED
    assert state.workflow == "direct_tool_call"
    published = [envelope.type for hop in hops for envelope in hop.published]
    assert "WorkflowCompleted" in published
    assert drain(client("sqs"), pipeline.resources.quarantine_url) == []


def test_direct_tool_stage_costs(pipeline: MotoPipeline) -> None:
    hops = pipeline.run(_seed_body())

    for hop in hops:
        assert len(hop.dynamodb(pipeline.pipeline_tables)) <= dynamodb_budget(hop.stage), (
            hop.stage,
            hop.calls,
        )
        assert len(hop.put_events) == (1 if hop.published else 0), (hop.stage, hop.calls)
        assert hop.of("sqs") == [], f"{hop.stage} quarantined on the happy path"
    (execute,) = [hop for hop in hops if hop.stage == "execute"]
    tool_calls = [call for call in execute.dynamodb() if call.tables == {"intentbus-crm"}]
    assert [call.operation for call in tool_calls] == ["UpdateItem"]
    assert len(execute.dynamodb()) == len(execute.dynamodb(pipeline.pipeline_tables)) + 1
    # Everything a stage published went out in that one call.
    for hop in hops:
        if hop.published:
            assert len(hop.put_events[0].request["Entries"]) == len(hop.published)


def test_every_redelivery_is_a_duplicate_with_the_same_outputs(pipeline: MotoPipeline) -> None:
    hops = pipeline.run(_seed_body())
    before = _crm_item("cust_88219")
    state = pipeline.runtime.store.state(SEED_TENANT, SEED_RUN)

    for hop in hops:
        again = pipeline.deliver(hop.stage, hop.body)
        assert again.outcome == "duplicate", hop.stage
        assert [e.id for e in again.published] == [e.id for e in hop.published], hop.stage
        assert [e.id for e in again.delivered] == [e.id for e in again.published]

    assert _crm_item("cust_88219") == before  # the tool did not run again
    assert pipeline.runtime.store.state(SEED_TENANT, SEED_RUN) == state


def test_malformed_seed_is_quarantined_with_the_field_named(pipeline: MotoPipeline) -> None:
    hops = pipeline.run(_seed_body(status="vip"))

    assert [(hop.stage, hop.outcome) for hop in hops] == [("validate", "quarantined")]
    (message,) = drain(client("sqs"), pipeline.resources.quarantine_url)
    record = json.loads(message["Body"])
    assert record["stage"] == "validate"
    assert record["field"] == "payload.parameters.status"
    assert record["body"] == hops[0].body
    assert _crm_item("cust_88219") is None
    assert pipeline.runtime.store.state(SEED_TENANT, SEED_RUN) is None
