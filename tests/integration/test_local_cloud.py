"""The local cloud itself: template.yaml on moto, and the poller that plays Lambda's SQS mappings.

Every function runs the recorder fixture (tests/integration/fixture_functions/recorder), which journals
what it received and misbehaves on request, so these tests do not depend on the real stages.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from intentbus.extensions import RUN_ENDED
from intentbus_local import (
    FakeLambdaContext,
    Invocation,
    LocalClock,
    LocalCloud,
    Mode,
    NotIdleError,
    load_template,
    sqs_receive,
)
from intentbus_local.seed import LOCAL_PRODUCER_BINDINGS

REPO = Path(__file__).resolve().parents[2]
RECORDER = Path(__file__).parent / "fixture_functions" / "recorder"
STAGES = ("Validate", "Decide", "Authorize", "Execute", "Record")
FUNCTIONS = tuple(f"{stage}Function" for stage in STAGES)
FOURTEEN_DAYS = 14 * 24 * 3600
PIPELINE_SOURCES = ("intentbus.pipeline", "intentbus.workflow")


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines()]

    def by_behaviour(self, behaviour: str) -> list[dict[str, Any]]:
        return [e for e in self.entries() if e["behaviour"] == behaviour]


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Journal:
    path = tmp_path / "journal.jsonl"
    monkeypatch.setenv("FIXTURE_JOURNAL", str(path))
    return Journal(path)


def _cloud(tmp_path: Path, mode: Mode = "inprocess") -> LocalCloud:
    return LocalCloud(
        mode=mode,
        code_dirs=dict.fromkeys(FUNCTIONS, RECORDER),
        logs_dir=tmp_path / "logs",
        stack_name="ib-test",
    )


@pytest.fixture(scope="class")
def shared_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    """One stack for the tests of a class that leave every stage queue drained (provisioning takes ~1 s).
    Class-scoped so it is gone before the next stack starts: in-process moto state is process-wide."""
    with _cloud(tmp_path_factory.mktemp("shared")) as running:
        yield running


@pytest.fixture
def cloud(tmp_path: Path, journal: Journal) -> Iterator[LocalCloud]:
    """A fresh stack, for tests that leave messages in flight or in a DLQ."""
    with _cloud(tmp_path) as running:
        yield running


def entry(detail_type: str, source: str = "intentbus.pipeline", **detail: Any) -> dict[str, Any]:
    return {"Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}


def put(cloud: LocalCloud, entries: list[dict[str, Any]]) -> list[str]:
    """The pipeline's own sources on the pipeline bus (as its roles put them), the rest on the ingress."""
    return cloud.put_events(
        [
            {"EventBusName": cloud.topology.bus_name, **e} if e["Source"] in PIPELINE_SOURCES else e
            for e in entries
        ]
    )


def own_rules(events: Any, bus: str) -> list[Any]:
    """The stack's rules on a bus: not the one EventBridge manages for the archive (it has ManagedBy)."""
    return [rule for rule in events.list_rules(EventBusName=bus)["Rules"] if "ManagedBy" not in rule]


def _bodies(invocation: Invocation) -> list[dict[str, Any]]:
    return [json.loads(record["body"]) for record in invocation.event["Records"]]


# ---------------------------------------------------------------------- the template, read offline


def test_template_functions_come_from_the_sam_template() -> None:
    template = load_template()
    assert set(template.functions) == {
        *FUNCTIONS,
        "ApprovalsFunction",
        "ExpireApprovalsFunction",
        "SweepDeadLettersFunction",
        "RepairFunction",  # declared; deployed only with RepairQuarantined=on
        "KafkaIngressFunction",  # deployed only with a Kafka cluster named
        "RabbitMqIngressFunction",  # deployed only with an Amazon MQ broker named
    }
    for stage in STAGES:
        spec = template.functions[f"{stage}Function"]
        assert spec.code_dir == REPO / "functions" / stage.lower()
        assert spec.handler == "app.lambda_handler"
        assert spec.timeout == 30
        (event,) = spec.sqs_events
        assert event.queue_logical_id == f"{stage}Queue"
        assert (event.batch_size, event.batching_window_seconds, event.report_batch_item_failures) == (
            10,
            1,
            True,
        )
    translated = template.cloudformation["Resources"]
    assert not [r for r in translated.values() if r["Type"].startswith("AWS::Serverless::")]
    assert translated["DecideFunction"]["Properties"]["Code"] == {
        "S3Bucket": "local",
        "S3Key": "DecideFunction.zip",
    }


def test_code_dirs_must_name_declared_functions() -> None:
    with pytest.raises(ValueError, match="NoSuchFunction"):
        load_template(code_dirs={"NoSuchFunction": RECORDER})


# ---------------------------------------------------------------------- one stack, drained after every test


class TestOnOneStack:
    def test_provisioning_creates_what_the_template_declares(self, shared_cloud: LocalCloud) -> None:
        topology = shared_cloud.topology
        events = shared_cloud.clients.events()
        sqs = shared_cloud.clients.sqs()
        dynamodb = shared_cloud.clients.dynamodb()

        assert topology.bus_name == "intentbus-ib-test"
        assert events.describe_event_bus(Name=topology.bus_name)["Arn"] == topology.bus_arn
        assert topology.ingress_bus_name == "intentbus-ingress-ib-test"
        assert events.describe_event_bus(Name=topology.ingress_bus_name)["Arn"] == topology.ingress_bus_arn

        def targets_of(bus: str) -> set[str]:
            rules = own_rules(events, bus)
            return {
                t["Arn"]
                for rule in rules
                for t in events.list_targets_by_rule(Rule=rule["Name"], EventBusName=bus)["Targets"]
            }

        assert len(own_rules(events, topology.bus_name)) == 5
        # Producers' events reach validate through the ingress only; the workflows' outcomes go to decide.
        assert targets_of(topology.bus_name) == {
            topology.queues[f"{stage}Queue"].arn for stage in STAGES if stage != "Validate"
        }
        (ingress_rule,) = events.list_rules(EventBusName=topology.ingress_bus_name)["Rules"]
        assert json.loads(ingress_rule["EventPattern"]) == {"source": [{"prefix": ""}]}
        assert targets_of(topology.ingress_bus_name) == {topology.queues["ValidateQueue"].arn}

        for stage in STAGES:
            function = topology.functions[f"{stage}Function"]
            (mapping,) = function.mappings
            assert mapping.queue.logical_id == f"{stage}Queue"
            assert mapping.visibility_timeout == 6 * function.timeout == 180
            assert mapping.max_receive_count == 5
            assert mapping.dlq is not None
            assert mapping.dlq.logical_id == f"{stage}DLQ"
            assert topology.dlqs[f"{stage}Queue"] == mapping.dlq
            assert (mapping.batch_size, mapping.batching_window_seconds) == (10, 1)
            assert mapping.report_batch_item_failures
            dlq = sqs.get_queue_attributes(QueueUrl=mapping.dlq.url, AttributeNames=["All"])["Attributes"]
            assert int(dlq["MessageRetentionPeriod"]) == FOURTEEN_DAYS
            queue_attributes = sqs.get_queue_attributes(QueueUrl=mapping.queue.url, AttributeNames=["All"])
            assert queue_attributes["Attributes"]["SqsManagedSseEnabled"] == "true"
        quarantine = sqs.get_queue_attributes(
            QueueUrl=topology.queues["QuarantineQueue"].url, AttributeNames=["All"]
        )
        assert int(quarantine["Attributes"]["MessageRetentionPeriod"]) == FOURTEEN_DAYS
        assert quarantine["Attributes"]["SqsManagedSseEnabled"] == "true", "it keeps models' raw output"

        # moto must not run mappings itself (it would try Docker on every send): all deployed disabled.
        mappings = shared_cloud.clients.lambda_().list_event_source_mappings()["EventSourceMappings"]
        assert len(mappings) == 5
        assert {m["State"] for m in mappings} == {"Disabled"}

        workflow = dynamodb.describe_table(TableName=topology.tables["WorkflowTable"])["Table"]
        assert {(k["AttributeName"], k["KeyType"]) for k in workflow["KeySchema"]} == {
            ("pk", "HASH"),
            ("sk", "RANGE"),
        }
        indexes = {gsi["IndexName"]: gsi for gsi in workflow["GlobalSecondaryIndexes"]}
        assert sorted(indexes) == ["gsi1", "gsi2", "gsi3"]
        for name, gsi in indexes.items():
            assert [k["AttributeName"] for k in gsi["KeySchema"]] == [f"{name}pk", f"{name}sk"]
        projections = {name: gsi["Projection"]["ProjectionType"] for name, gsi in indexes.items()}
        assert projections == {"gsi1": "ALL", "gsi2": "ALL", "gsi3": "KEYS_ONLY"}
        assert workflow["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        for table, ttl_attribute in (("WorkflowTable", "ttl"), ("IdempotencyTable", "expiration")):
            ttl = dynamodb.describe_time_to_live(TableName=topology.tables[table])["TimeToLiveDescription"]
            assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", ttl_attribute)
        for table in ("WorkflowTable", "IdempotencyTable", "CrmTable"):
            backups = dynamodb.describe_continuous_backups(TableName=topology.tables[table])
            pitr = backups["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
            assert pitr["PointInTimeRecoveryStatus"] == "ENABLED"
        crm = dynamodb.describe_table(TableName=topology.tables["CrmTable"])["Table"]
        assert crm["KeySchema"] == [
            {"AttributeName": "tenant_id", "KeyType": "HASH"},
            {"AttributeName": "customer_id", "KeyType": "RANGE"},
        ]

    def test_function_environment_resolves_as_declared(
        self, shared_cloud: LocalCloud, journal: Journal
    ) -> None:
        topology = shared_cloud.topology
        execute = topology.functions["ExecuteFunction"].environment
        assert execute["WORKFLOW_TABLE"] == topology.tables["WorkflowTable"]
        assert execute["IDEMPOTENCY_TABLE"] == topology.tables["IdempotencyTable"]
        assert execute["CRM_TABLE"] == topology.tables["CrmTable"]
        assert execute["EVENT_BUS_NAME"] == topology.bus_name
        assert execute["QUARANTINE_QUEUE_URL"] == topology.queues["QuarantineQueue"].url
        assert execute["INTENTBUS_ENVIRONMENT"] == "dev"
        assert (
            execute["INTENTBUS_WORKFLOWS"] == "intentbus.workflows.incident,intentbus.workflows.direct_tool"
        )
        assert execute["POWERTOOLS_SERVICE_NAME"] == "intentbus-execute"
        assert execute["POWERTOOLS_LOG_LEVEL"] == "INFO"
        assert execute["INTENTBUS_PRODUCERS"] == LOCAL_PRODUCER_BINDINGS  # the local cloud's default
        assert "IDEMPOTENCY_TABLE" not in topology.functions["DecideFunction"].environment

        put(shared_cloud, [entry("CommandAuthorized")])
        shared_cloud.run_until_idle(deadline_seconds=30)
        (seen,) = journal.entries()
        assert seen["function"] == topology.functions["ExecuteFunction"].name
        assert seen["env"]["WORKFLOW_TABLE"] == topology.tables["WorkflowTable"]
        assert seen["env"]["CRM_TABLE"] == topology.tables["CrmTable"]
        assert seen["env"]["POWERTOOLS_SERVICE_NAME"] == "intentbus-execute"
        assert "WORKFLOW_TABLE" not in os.environ  # the overlay is undone after the invocation

    def test_event_accepted_reaches_the_decide_function_with_account(
        self, shared_cloud: LocalCloud, journal: Journal
    ) -> None:
        seen: list[Invocation] = []
        stop_observing = shared_cloud.add_observer(seen.append)
        put(shared_cloud, [entry("EventAccepted", run="r-1")])

        summary = shared_cloud.run_until_idle(max_invocations=1, deadline_seconds=30)
        stop_observing()

        assert summary.idle
        assert {k: summary.invocations[k] for k in FUNCTIONS} == {
            **dict.fromkeys(FUNCTIONS, 0),
            "DecideFunction": 1,
        }
        assert (summary.messages_processed, summary.messages_failed) == (1, 0)
        (invocation,) = seen
        assert invocation.function_logical_id == "DecideFunction"
        assert invocation.error is None
        (record,) = invocation.event["Records"]
        assert record["eventSource"] == "aws:sqs"
        assert record["eventSourceARN"] == shared_cloud.topology.queues["DecideQueue"].arn
        assert record["attributes"]["ApproximateReceiveCount"] == "1"
        system_attributes = {"SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"}
        assert system_attributes <= record["attributes"].keys()
        (body,) = _bodies(invocation)
        assert body["account"] == shared_cloud.topology.account_id
        assert (body["source"], body["detail-type"], body["detail"]) == (
            "intentbus.pipeline",
            "EventAccepted",
            {"run": "r-1"},
        )
        # Powertools' EventBridgeModel (which requires `account`) parsed it inside the handler.
        (journaled,) = journal.entries()
        assert journaled["account"] == shared_cloud.topology.account_id

    def test_each_rule_routes_to_its_stage(self, shared_cloud: LocalCloud, journal: Journal) -> None:
        put(
            shared_cloud,
            [
                entry("AlarmRaised", source="monitoring"),
                entry("IncidentResolved", source="intentbus.workflow"),
                # a run's last outcome, marked so by record: no step follows it, no stage is sent it
                entry("IncidentClosed", source="intentbus.workflow", extensions={RUN_ENDED: True}),
                entry("EventAccepted"),
                entry("CommandProposed"),
                entry("CommandAuthorized"),
                entry("CommandExecuted"),
                entry("CommandFailed"),
                entry("CommandDenied"),
                entry("SomethingElse"),  # from the pipeline, but no stage subscribes
            ],
        )
        # Whatever a producer puts on the ingress goes to validate, a pipeline fact included.
        shared_cloud.put_events([entry("CommandAuthorized", forged=True)])
        shared_cloud.run_until_idle(deadline_seconds=30)
        names = {f.name: f.logical_id for f in shared_cloud.topology.functions.values()}
        routed = sorted((names[e["function"]], e["detail_type"]) for e in journal.entries())
        assert routed == [
            ("AuthorizeFunction", "CommandProposed"),
            ("DecideFunction", "EventAccepted"),
            ("DecideFunction", "IncidentResolved"),  # a workflow's outcome: record's entry is its proof
            ("ExecuteFunction", "CommandAuthorized"),
            ("RecordFunction", "CommandDenied"),
            ("RecordFunction", "CommandExecuted"),
            ("RecordFunction", "CommandFailed"),
            ("ValidateFunction", "AlarmRaised"),
            ("ValidateFunction", "CommandAuthorized"),
        ]

    def test_logs_go_to_the_function_log_including_the_import_time_logger(
        self, shared_cloud: LocalCloud, journal: Journal
    ) -> None:
        put(shared_cloud, [entry("EventAccepted", behaviour="ok")])
        shared_cloud.run_until_idle(deadline_seconds=30)
        log = shared_cloud.log_path("DecideFunction").read_text(encoding="utf-8").splitlines()
        assert log[0].startswith("START RequestId: ")
        assert any(line.startswith("REPORT RequestId: ") for line in log)
        structured = [json.loads(line) for line in log if line.startswith("{")]
        assert any(s.get("message") == "record" for s in structured)
        # one module per function: the same recorder code logs as each function's own service, to its own log
        assert {s.get("service") for s in structured} == {"intentbus-decide"}

    def test_remaining_time_follows_the_local_clock(self, shared_cloud: LocalCloud) -> None:
        clock = LocalClock()
        context = FakeLambdaContext(shared_cloud.topology.functions["ExecuteFunction"], clock, "req-1")
        assert 29_000 < context.get_remaining_time_in_millis() <= 30_000
        clock.advance(20)
        assert 9_000 < context.get_remaining_time_in_millis() <= 10_000
        clock.advance(60)
        assert context.get_remaining_time_in_millis() == 0
        assert context.memory_limit_in_mb == 512
        assert context.invoked_function_arn == shared_cloud.topology.functions["ExecuteFunction"].arn


# ---------------------------------------------------------------------- failures


def test_partial_batch_failure_deletes_only_the_successes(cloud: LocalCloud, journal: Journal) -> None:
    put(cloud, [entry("EventAccepted", behaviour=b) for b in ("ok", "fail", "ok")])

    first = cloud.run_until_idle(max_invocations=1, raise_on_limit=False)

    assert not first.idle
    assert (first.messages_processed, first.messages_failed) == (2, 1)
    assert cloud.queue_depth("DecideQueue") == (0, 1, 0)  # the failed one is in flight, the rest deleted


def test_queue_depth_read_from_moto_s_queue_is_what_get_queue_attributes_answers(
    cloud: LocalCloud, journal: Journal
) -> None:
    sqs, queue = cloud.clients.sqs(), cloud.topology.queues["DecideQueue"]
    sqs.send_message(QueueUrl=queue.url, MessageBody="{}", DelaySeconds=60)
    for _ in range(3):
        sqs.send_message(QueueUrl=queue.url, MessageBody="{}")
    sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=1)
    answered = sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["All"])["Attributes"]

    assert (
        cloud.queue_depth("DecideQueue")
        == (2, 1, 1)
        == (
            int(answered["ApproximateNumberOfMessages"]),
            int(answered["ApproximateNumberOfMessagesNotVisible"]),
            int(answered["ApproximateNumberOfMessagesDelayed"]),
        )
    )


def test_an_in_process_delete_answers_what_delete_message_batch_answers(cloud: LocalCloud) -> None:
    """The poller's deletes skip the request in process: the same messages go, the same handles fail."""
    sqs = cloud.clients.sqs()
    answers: dict[str, list[dict[str, Any]]] = {}

    def requested(url: str, entries: list[dict[str, str]]) -> list[dict[str, Any]]:
        return [dict(f) for f in sqs.delete_message_batch(QueueUrl=url, Entries=entries)["Failed"]]  # type: ignore[arg-type]

    deletes: list[tuple[str, Callable[[str, list[dict[str, str]]], list[dict[str, Any]]]]] = [
        ("request", requested),
        ("in process", cloud._delete_batch),
    ]
    for name, delete in deletes:
        url = cloud.topology.queues["DecideDLQ"].url
        for number in range(3):
            sqs.send_message(QueueUrl=url, MessageBody=str(number))
        first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3, VisibilityTimeout=0)["Messages"]
        again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]  # a newer handle
        handles = [m["ReceiptHandle"] for m in first[1:]] + [again[0]["ReceiptHandle"], "not-a-handle"]
        failed = delete(url, [{"Id": str(n), "ReceiptHandle": h} for n, h in enumerate(handles)])
        answers[name] = [{**f, "Message": f["Message"].replace(handles[int(f["Id"])], "<h>")} for f in failed]
        assert cloud.queue_depth("DecideDLQ") == (0, 0, 0), name
    assert answers["in process"] == answers["request"]
    assert [f["Id"] for f in answers["request"]] == ["3"]


def test_an_in_process_run_receives_only_from_queues_with_a_message_to_hand_out(
    cloud: LocalCloud, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    received: list[int] = []
    in_process: list[int] = []
    cloud.clients.sqs().meta.events.register(
        "after-call.sqs.ReceiveMessage",
        lambda parsed, **_: received.append(len(parsed.get("Messages", []))),
    )
    receive = sqs_receive.receive

    def counted(*args: Any) -> list[dict[str, Any]] | None:
        messages = receive(*args)
        in_process.append(-1 if messages is None else len(messages))
        return messages

    monkeypatch.setattr(sqs_receive, "receive", counted)
    put(cloud, [entry("EventAccepted", behaviour="ok") for _ in range(3)])

    summary = cloud.run_until_idle()

    assert summary.idle
    assert summary.messages_processed >= 3
    assert received == []  # the poller's receives are answered by moto's SQS backend itself
    assert in_process
    assert 0 not in in_process
    assert -1 not in in_process


def test_looking_into_a_queue_in_process_makes_no_request_and_leaves_its_messages_visible(
    cloud: LocalCloud,
) -> None:
    requests: list[str] = []
    for operation in ("ReceiveMessage", "ChangeMessageVisibilityBatch"):
        cloud.clients.sqs().meta.events.register(
            f"after-call.sqs.{operation}", lambda parsed, **_: requests.append("request")
        )
    cloud.clients.sqs().send_message(QueueUrl=cloud.topology.queues["DecideDLQ"].url, MessageBody="{}")

    assert cloud.queue_messages("ValidateDLQ") == []
    (first,) = cloud.queue_messages("DecideDLQ")
    assert cloud.queue_depth("DecideDLQ") == (1, 0, 0)
    (again,) = cloud.queue_messages("DecideDLQ")

    assert first.body == again.body == "{}"
    assert first.message_id == again.message_id
    assert [first.attributes["ApproximateReceiveCount"], again.attributes["ApproximateReceiveCount"]] == [
        "1",
        "2",
    ]
    assert requests == []  # moto's SQS backend answered the receives and made the message visible again


def test_a_poison_record_ends_in_its_dlq_and_its_neighbours_run_once(
    cloud: LocalCloud, journal: Journal
) -> None:
    put(cloud, [entry("EventAccepted", behaviour=b) for b in ("ok", "fail", "ok")])
    started = cloud.clock.now()

    summary = cloud.run_until_idle(deadline_seconds=30)

    assert summary.idle
    assert summary.invocations["DecideFunction"] == 5
    assert (summary.messages_processed, summary.messages_failed) == (2, 5)
    assert [e["receive_count"] for e in journal.by_behaviour("ok")] == [1, 1]
    assert [e["receive_count"] for e in journal.by_behaviour("fail")] == [1, 2, 3, 4, 5]
    # four visibility timeouts were skipped in virtual time, not waited for
    assert summary.virtual_seconds_advanced >= 4 * 180
    assert cloud.clock.now() - started >= 4 * 180
    assert summary.wall_seconds < 30
    (poison,) = cloud.queue_messages("DecideDLQ")
    assert poison.message_id == journal.by_behaviour("fail")[0]["message_id"]
    assert poison.json()["detail"] == {"behaviour": "fail"}
    assert cloud.queue_depth("DecideQueue") == (0, 0, 0)
    assert cloud.queue_messages("ValidateDLQ") == []


def test_an_exception_fails_the_whole_batch(cloud: LocalCloud, journal: Journal) -> None:
    errors: list[BaseException | None] = []
    cloud.add_observer(
        lambda invocation: (
            errors.append(invocation.error) if invocation.function_logical_id == "AuthorizeFunction" else None
        )
    )
    put(cloud, [entry("CommandProposed", behaviour=b) for b in ("ok", "crash-first", "ok")])

    first = cloud.run_until_idle(max_invocations=1, raise_on_limit=False)
    assert (first.messages_processed, first.messages_failed) == (0, 3)
    assert cloud.queue_depth("AuthorizeQueue") == (0, 3, 0)  # nothing deleted

    rest = cloud.run_until_idle(deadline_seconds=30)
    assert rest.idle
    assert (rest.messages_processed, rest.messages_failed) == (3, 0)
    assert rest.virtual_seconds_advanced >= 180 - 1
    assert rest.invocations["ExpireApprovalsFunction"] == 1  # its rate(1 minute) rule, once per jump
    assert sorted(e["receive_count"] for e in journal.entries()) == [
        2,
        2,
        2,
    ]  # the first delivery never got in
    assert [type(e).__name__ for e in errors] == ["RuntimeError", "NoneType"]
    assert "RuntimeError: crash on first delivery" in cloud.log_path("AuthorizeFunction").read_text()


def test_a_malformed_batch_response_fails_the_whole_batch(cloud: LocalCloud, journal: Journal) -> None:
    put(cloud, [entry("CommandExecuted", behaviour=b) for b in ("ok", "bogus-report")])
    mapping = cloud.topology.functions["RecordFunction"].mappings[0]

    result = cloud.poller.poll(mapping)

    assert result is not None
    assert result.invocation.error is None
    assert result.response_error is not None
    assert (len(result.succeeded), len(result.failed)) == (0, 2)


def test_a_batch_larger_than_one_receive_is_gathered(cloud: LocalCloud) -> None:
    sqs = cloud.clients.sqs()
    mapping = cloud.topology.functions["DecideFunction"].mappings[0]
    for start in range(0, 25, 10):
        sqs.send_message_batch(
            QueueUrl=mapping.queue.url,
            Entries=[
                {"Id": str(n), "MessageBody": json.dumps({"n": n})} for n in range(start, min(start + 10, 25))
            ],
        )

    batch = cloud.poller.receive_batch(dataclasses.replace(mapping, batch_size=25))

    assert sorted(json.loads(m["Body"])["n"] for m in batch) == list(range(25))


def test_idle_means_nothing_in_flight_either(cloud: LocalCloud) -> None:
    sqs = cloud.clients.sqs()
    queue = cloud.topology.queues["ExecuteQueue"]
    sqs.send_message(QueueUrl=queue.url, MessageBody="{}")
    sqs.receive_message(QueueUrl=queue.url, VisibilityTimeout=600)  # in flight, but not the poller's

    with pytest.raises(NotIdleError, match="deadline") as raised:
        cloud.run_until_idle(deadline_seconds=0.3)

    assert not raised.value.summary.idle
    assert cloud.queue_depth("ExecuteQueue") == (0, 1, 0)


# ---------------------------------------------------------------------- server mode


def test_server_mode_handlers_reach_moto_through_the_endpoint(tmp_path: Path, journal: Journal) -> None:
    with _cloud(tmp_path, mode="server") as cloud:
        assert cloud.endpoint_url is not None
        assert cloud.endpoint_url.startswith("http://127.0.0.1:")
        cloud.put_events([entry("AlarmRaised", source="monitoring", behaviour="quarantine")])

        summary = cloud.run_until_idle(deadline_seconds=30)

        assert summary.idle
        assert summary.invocations["ValidateFunction"] == 1
        (quarantined,) = cloud.queue_messages("QuarantineQueue")
        body = quarantined.json()
        assert (body["detail-type"], body["account"]) == ("AlarmRaised", cloud.topology.account_id)
