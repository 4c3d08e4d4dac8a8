"""The intentbus command: local run with its report, emit, schema export, and bad arguments."""

from __future__ import annotations

import json
import os
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from intentbus.catalog import Catalog
from intentbus.cli.main import main

EVENTS = Path(__file__).parents[2] / "infra" / "events" / "sample.jsonl"


def test_local_run_reports_where_every_input_ended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_path = tmp_path / "report.json"
    code = main(["local", "run", "--events", str(EVENTS), "--report", str(report_path), "--seed-demo"])

    assert code == 0
    report = json.loads(report_path.read_text())
    assert [item["bucket"] for item in report["inputs"]] == [
        "applied",
        "duplicate",
        "applied",
        "denied",
        "applied",
        "quarantined",
        "quarantined",
    ]
    assert report["inputs"][5]["reason"] == "tenant_id: Field required"
    assert report["inputs"][6]["reason"].startswith("payload.parameters.status: Input should be")
    statuses = sorted((run["workflow"], run["status"]) for run in report["workflows"])
    assert statuses == [
        ("direct_tool_call", "COMPLETED"),
        ("direct_tool_call", "COMPLETED"),
        ("incident_response", "COMPLETED"),
        ("incident_response", "DENIED"),
    ]
    assert "may not touch ecs:shop/checkout-api" in str(report["inputs"][3]["reason"])  # not its service
    assert "3 applied, 1 denied, 1 duplicate, 2 quarantined" in capsys.readouterr().out


def test_emit_puts_each_envelope_on_the_bus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    events = tmp_path / "events.jsonl"
    events.write_text(EVENTS.read_text())
    with mock_aws():
        boto3.client("events").create_event_bus(Name="bus")
        sqs = boto3.client("sqs")
        url = sqs.create_queue(QueueName="all")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        boto3.client("events").put_rule(
            Name="all", EventBusName="bus", EventPattern=json.dumps({"source": [{"prefix": ""}]})
        )
        boto3.client("events").put_targets(Rule="all", EventBusName="bus", Targets=[{"Id": "q", "Arn": arn}])

        assert main(["emit", str(events), "--bus", "bus"]) == 0

        received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert "emitted 7 events to bus" in capsys.readouterr().out
    detail_types = sorted(json.loads(message["Body"])["detail-type"] for message in received)
    assert detail_types.count("TOOL_EXECUTION_REQUESTED") == 5


def test_schema_export_writes_one_schema_per_type(tmp_path: Path) -> None:
    assert main(["schema", "export", "--out", str(tmp_path)]) == 0
    schema = json.loads((tmp_path / "TOOL_EXECUTION_REQUESTED.schema.json").read_text())
    assert schema["properties"]["kind"] == {"const": "command", "title": "Kind"}
    catalog = Catalog.from_modules("intentbus.workflows.incident,intentbus.workflows.direct_tool")
    assert {path.name for path in tmp_path.glob("*.schema.json")} == {
        f"{spec.name}.schema.json" for spec in catalog.types
    }


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["frobnicate"], "intentbus: argument command: invalid choice: 'frobnicate'"),
        (["local", "run"], "intentbus local run: the following arguments are required: --events"),
        (
            ["emit", "missing.jsonl", "--bus", "b"],
            "intentbus: [Errno 2] No such file or directory: 'missing.jsonl'",
        ),
    ],
)
def test_a_bad_argument_prints_one_helpful_line(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(str(exit_.code))
    assert code != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(expected)
