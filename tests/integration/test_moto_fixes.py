"""The moto bugs intentbus_local.moto_fixes fixes: each test runs moto's own code and shows the bug is
still there, so it fails once a moto release fixes it (then drop that fix); and shows the fix.

(The layer version's ``Ref`` is pinned in tests/integration/test_redeploy.py.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, ClassVar

import boto3
import pytest
from moto import mock_aws

from intentbus_local import moto_fixes

REGION = "us-east-1"
ACCOUNT = "123456789012"
BUS = "pinned"
PATTERN = {"source": ["intentbus.pipeline"]}
MOTO_BUG = f"moto no longer has this bug (found on {moto_fixes.FOUND_ON}): drop its fix in moto_fixes.py"


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    moto_fixes.apply()
    with mock_aws():
        events = boto3.client("events", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        bus_arn = events.create_event_bus(Name=BUS)["EventBusArn"]
        queues: dict[str, str] = {}
        for rule in ("first", "second"):
            url = sqs.create_queue(QueueName=rule)["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
            events.put_rule(Name=rule, EventBusName=BUS, EventPattern=json.dumps(PATTERN))
            events.put_targets(Rule=rule, EventBusName=BUS, Targets=[{"Id": rule, "Arn": arn}])
            queues[rule] = url
        yield {"events": events, "sqs": sqs, "bus_arn": bus_arn, "queues": queues}


def backend() -> Any:
    from moto.events.models import events_backends

    return events_backends[ACCOUNT][REGION]


def depth(aws: dict[str, Any], rule: str) -> int:
    attributes = aws["sqs"].get_queue_attributes(
        QueueUrl=aws["queues"][rule], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def put(aws: dict[str, Any], when: datetime) -> None:
    aws["events"].put_events(
        Entries=[
            {
                "EventBusName": BUS,
                "Source": "intentbus.pipeline",
                "DetailType": "X",
                "Detail": "{}",
                "Time": when,
            }
        ]
    )


def test_moto_builds_no_archive_from_a_template_s_event_pattern(aws: dict[str, Any]) -> None:
    create = moto_fixes.moto_original("Archive.create_from_cloudformation_json")
    from moto.events.models import Archive

    template = {"Properties": {"SourceArn": aws["bus_arn"], "EventPattern": PATTERN, "RetentionDays": 14}}
    try:
        create(Archive, "moto-own", template, ACCOUNT, REGION)
    except TypeError:
        pass  # json.loads of the pattern object: the bug is still there
    else:
        pytest.fail(MOTO_BUG)
    generated = f"a-stack-name-long-enough-{'x' * 20}-PipelineArchive-0123456789AB"
    fixed = Archive.create_from_cloudformation_json(generated, template, ACCOUNT, REGION)
    assert len(fixed.name) == moto_fixes.ARCHIVE_NAME_MAX
    assert fixed.name.endswith("-0123456789AB")
    assert json.loads(str(fixed.event_pattern.dump())) == PATTERN
    assert fixed.retention == 14


def test_moto_delivers_through_a_disabled_rule(aws: dict[str, Any]) -> None:
    aws["events"].disable_rule(Name="first", EventBusName=BUS)
    rule = backend().event_buses[BUS].rules["first"]
    send = moto_fixes.moto_original("Rule.send_to_targets")
    event = {
        **{"id": "1", "source": PATTERN["source"][0], "detail-type": "X", "detail": {}, "resources": []},
        **{"account": ACCOUNT, "region": REGION, "time": 0, "ingestion-time": 0},
    }
    send(rule, dict(event))
    assert depth(aws, "first") == 1, MOTO_BUG

    put(aws, datetime.now(UTC))
    assert (depth(aws, "first"), depth(aws, "second")) == (1, 1), "fixed: the disabled rule got nothing"


def test_moto_replays_everything_to_every_rule(aws: dict[str, Any]) -> None:
    events = aws["events"]
    archive = events.create_archive(ArchiveName="pinned", EventSourceArn=aws["bus_arn"])["ArchiveArn"]
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    put(aws, datetime(2026, 1, 1, 12, tzinfo=UTC))
    put(aws, datetime(2026, 1, 2, 12, tzinfo=UTC))
    first_rule = events.describe_rule(Name="first", EventBusName=BUS)["Arn"]
    destination = {"Arn": aws["bus_arn"], "FilterArns": [first_rule]}
    assert (depth(aws, "first"), depth(aws, "second")) == (2, 2)

    from moto.events.models import Replay

    window: Any = {"start_time": start.timestamp(), "end_time": end.timestamp()}
    replay = Replay(ACCOUNT, REGION, "moto-own", "", archive, destination=destination, **window)
    moto_fixes.moto_original("Replay.replay_events")(replay, backend().archives["pinned"])
    assert (depth(aws, "first"), depth(aws, "second")) == (4, 4), MOTO_BUG

    events.start_replay(
        ReplayName="fixed",
        EventSourceArn=archive,
        EventStartTime=start,
        EventEndTime=end,
        Destination=destination,
    )
    assert (depth(aws, "first"), depth(aws, "second")) == (5, 4), "fixed: one event, to the first rule only"
    received = aws["sqs"].receive_message(QueueUrl=aws["queues"]["first"], MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"]).get("replay-name") for m in received].count("fixed") == 1


def entry(detail_bytes: int, **extra: Any) -> dict[str, Any]:
    """An entry whose size, as AWS counts it, is 14 + 18 + 1 + ``detail_bytes``."""
    text = "x" * (detail_bytes - len('{"p":""}'))
    return {
        "EventBusName": BUS,
        "Source": "intentbus.pipeline",
        "DetailType": "X",
        "Detail": json.dumps({"p": text}, separators=(",", ":")),
        "Time": datetime(2026, 1, 1, tzinfo=UTC),
        **extra,
    }


def test_moto_accepts_put_events_over_256_kb(aws: dict[str, Any]) -> None:
    from botocore.exceptions import ClientError
    from moto.events.models import EventsBackend

    limit = 256 * 1024
    overhead = 14 + len("intentbus.pipeline") + len("X")
    over = entry(limit - overhead + 1)
    original = moto_fixes.moto_original("EventsBackend.put_events")
    results = original(backend(), [{k: v for k, v in over.items() if k != "Time"}])
    assert "ErrorCode" not in results[0], MOTO_BUG
    assert EventsBackend.put_events is not original

    # Fixed, as AWS answers: an entry at the limit is accepted; one byte over refuses the request whole.
    assert aws["events"].put_events(Entries=[entry(limit - overhead)])["FailedEntryCount"] == 0
    with pytest.raises(ClientError) as refused:
        aws["events"].put_events(Entries=[entry(limit - overhead + 1)])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert refused.value.response["Error"]["Message"] == moto_fixes.PUT_EVENTS_TOO_LARGE
    with pytest.raises(ClientError):  # two entries under the limit each, over it together
        aws["events"].put_events(Entries=[entry(limit // 2), entry(limit // 2)])


def test_moto_counts_an_sqs_message_in_characters_without_its_attributes(aws: dict[str, Any]) -> None:
    from botocore.exceptions import ClientError
    from moto.sqs.models import sqs_backends

    limit = 1024 * 1024
    url = aws["queues"]["first"]
    over_in_bytes = "é" * (limit // 2 + 1)  # 524,289 characters, 1,048,578 bytes
    original = moto_fixes.moto_original("SQSBackend.send_message")
    original(sqs_backends[ACCOUNT][REGION], "first", over_in_bytes)
    assert depth(aws, "first") == 1, MOTO_BUG

    # Fixed, as AWS counts: the body's bytes plus each attribute's name, type and value.
    assert aws["sqs"].send_message(QueueUrl=url, MessageBody="x" * limit)["MessageId"]
    with pytest.raises(ClientError, match="Message must be shorter than 1048576 bytes"):
        aws["sqs"].send_message(QueueUrl=url, MessageBody=over_in_bytes)
    with pytest.raises(ClientError, match="Message must be shorter"):
        aws["sqs"].send_message(
            QueueUrl=url,
            MessageBody="x" * (limit - 10),
            MessageAttributes={"reason": {"DataType": "String", "StringValue": "long enough"}},
        )


def test_a_list_item_that_is_aws_novalue_is_dropped() -> None:
    """As in ``Layers: [!Ref IntentbusLayer, !If [UsingOtelCollectorLayer, ARN, !Ref AWS::NoValue]]``."""
    from moto.cloudformation import parsing

    moto_fixes.apply()

    class Resources:  # what clean_json reads of moto's ResourceMap: conditions, and Ref resolves
        lazy_condition_map: ClassVar[dict[str, bool]] = {"UsingOtelCollectorLayer": False}

        def __getitem__(self, name: str) -> None:
            return None  # AWS::NoValue

    listed = ["layer-arn", {"Fn::If": ["UsingOtelCollectorLayer", "other-arn", {"Ref": "AWS::NoValue"}]}]
    original = moto_fixes.moto_original("parsing.clean_json")
    assert original(listed, Resources()) == ["layer-arn", None], MOTO_BUG
    assert parsing.clean_json(listed, Resources()) == ["layer-arn"]  # type: ignore[arg-type]


def _queue_template(*, redrive: bool) -> str:
    queue: dict[str, Any] = {"Type": "AWS::SQS::Queue", "Properties": {}}
    if redrive:
        queue["Properties"]["RedrivePolicy"] = {
            "deadLetterTargetArn": {"Fn::GetAtt": ["Dead", "Arn"]},
            "maxReceiveCount": 5,
        }
    body = {"Resources": {"Dead": {"Type": "AWS::SQS::Queue"}, "Work": queue}, "Outputs": {}}
    body["Outputs"]["Work"] = {"Value": {"Ref": "Work"}}
    return json.dumps(body)


def _redrive_after_update(aws: dict[str, Any], stack: str) -> str | None:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(StackName=stack, TemplateBody=_queue_template(redrive=False))
    cloudformation.update_stack(StackName=stack, TemplateBody=_queue_template(redrive=True))
    (output,) = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]["Outputs"]
    attributes = aws["sqs"].get_queue_attributes(QueueUrl=output["OutputValue"], AttributeNames=["All"])
    policy: str | None = attributes["Attributes"].get("RedrivePolicy")
    return policy


def test_moto_updates_no_redrive_policy_of_a_queue(
    aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.sqs.models import Queue

    monkeypatch.setattr(
        Queue,
        "update_from_cloudformation_json",
        classmethod(moto_fixes.moto_original("Queue.update_from_cloudformation_json")),
    )
    assert _redrive_after_update(aws, "pinned-moto") is None, MOTO_BUG
    monkeypatch.undo()
    policy = _redrive_after_update(aws, "pinned-fixed")
    assert policy is not None
    assert json.loads(policy)["maxReceiveCount"] == 5


def _orders_table(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName="orders",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    dynamodb.put_item(TableName="orders", Item={"pk": {"S": "kept"}, "n": {"N": "1"}})


def _failing_transaction(dynamodb: Any) -> None:
    """Overwrites ``kept``, creates ``new``, creates ``other`` by update, then a condition fails."""
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError, match="TransactionCanceledException"):
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "orders", "Item": {"pk": {"S": "kept"}, "n": {"N": "2"}}}},
                {"Put": {"TableName": "orders", "Item": {"pk": {"S": "new"}, "n": {"N": "2"}}}},
                {
                    "Update": {
                        "TableName": "orders",
                        "Key": {"pk": {"S": "other"}},
                        "UpdateExpression": "SET n = :n",
                        "ExpressionAttributeValues": {":n": {"N": "3"}},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": "orders",
                        "Key": {"pk": {"S": "absent"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )


def test_moto_copies_every_table_a_transaction_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import copy

    from moto.dynamodb import models

    moto_fixes.apply()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        _orders_table(dynamodb)
        tables = models.dynamodb_backends[ACCOUNT][REGION].tables
        table = tables["orders"]

        # moto's own: the whole table deep-copied before the transaction, the copy swapped in to roll back
        monkeypatch.setattr(models, "copy", copy)
        monkeypatch.setattr(
            models.DynamoDBBackend,
            "transact_write_items",
            moto_fixes.moto_original("DynamoDBBackend.transact_write_items"),
        )
        _failing_transaction(dynamodb)
        assert tables["orders"] is not table, MOTO_BUG
        monkeypatch.undo()

        # Fixed: the same outcome, the items the transaction wrote put back, the table itself kept
        table = tables["orders"]
        _failing_transaction(dynamodb)
        assert tables["orders"] is table
        items = dynamodb.scan(TableName="orders")["Items"]
        assert items == [{"pk": {"S": "kept"}, "n": {"N": "1"}}]

        dynamodb.transact_write_items(  # and a transaction that succeeds writes as before
            TransactItems=[{"Put": {"TableName": "orders", "Item": {"pk": {"S": "new"}, "n": {"N": "2"}}}}]
        )
        assert len(dynamodb.scan(TableName="orders")["Items"]) == 2
