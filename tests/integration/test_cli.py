"""The intentbus command: local run with its report, emit, schema export, and bad arguments."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from intentbus.catalog import Catalog
from intentbus_cli.main import main

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


def test_local_run_redeploys_between_two_batches_of_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = tmp_path / "later.jsonl"
    incident = json.loads(EVENTS.read_text().splitlines()[2])
    direct = json.loads(EVENTS.read_text().splitlines()[4])
    later.write_text(
        json.dumps({**incident, "id": "evt-latency-after"})
        + "\n"
        + json.dumps({**direct, "id": "ce-crm-9"})
        + "\n"
    )
    report_path = tmp_path / "report.json"
    argv = ["local", "run", "--events", str(EVENTS), "--seed-demo", "--environment", "production"]
    argv += ["--redeploy", "Workflows=intentbus.workflows.direct_tool", "--then-events", str(later)]

    assert main([*argv, "--report", str(report_path)]) == 0

    report = json.loads(report_path.read_text())
    before = {item["line"]: item for item in report["before_redeploy"]["inputs"]}
    assert (before[3]["bucket"], before[3]["reason"]) == ("waiting", "AWAITING_APPROVAL")
    after = report["after_redeploy"]["inputs"]
    assert [item["bucket"] for item in after] == ["quarantined", "applied"]
    assert after[0]["reason"] == "unknown type 'ServiceLatencyIncreased': no registered workflow declares it"
    out = capsys.readouterr().out
    assert "redeployed: Workflows=intentbus.workflows.direct_tool" in out
    assert "after the redeploy: line 2: applied" in out


@pytest.fixture
def ingress(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    """A moto ingress bus named by $INGRESS_BUS_NAME, with a rule sending everything to one queue."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "INGRESS_BUS_NAME": "ingress",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("INTENTBUS_WORKFLOWS", raising=False)
    with mock_aws():
        events = boto3.client("events")
        events.create_event_bus(Name="ingress")
        sqs = boto3.client("sqs")
        url = sqs.create_queue(QueueName="all")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(
            Name="all", EventBusName="ingress", EventPattern=json.dumps({"source": [{"prefix": ""}]})
        )
        events.put_targets(Rule="all", EventBusName="ingress", Targets=[{"Id": "q", "Arn": arn}])
        yield sqs, url


def _received(sqs: Any, url: str) -> list[dict[str, Any]]:
    return [
        json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    ]


def test_emit_puts_each_valid_envelope_on_the_ingress_bus_and_names_the_lines_it_refused(
    tmp_path: Path, ingress: tuple[Any, str], capsys: pytest.CaptureFixture[str]
) -> None:
    sqs, url = ingress
    events = tmp_path / "events.jsonl"
    events.write_text(EVENTS.read_text() + "{not json\n")

    assert main(["emit", str(events), "--source", "crm.example"]) == 1

    out, err = capsys.readouterr()
    assert "emitted 3 of 8 events to ingress; 5 refused" in out
    refused = err.strip().splitlines()
    assert [line.split(": ", 1)[0] for line in refused] == [f"{events}:{n}" for n in (3, 4, 6, 7, 8)]
    assert refused[0].endswith(
        "the envelope's source 'monitoring.example' is not this producer's source 'crm.example': "
        "a producer sends only as the source its IAM policy pins"
    )
    assert refused[2] == f"{events}:6: tenant_id: Field required"  # what validate would quarantine it for
    assert refused[3].startswith(f"{events}:7: payload.parameters.status: Input should be")
    assert refused[4].startswith(f"{events}:8: not JSON")
    received = _received(sqs, url)
    assert sorted(event["detail-type"] for event in received) == ["TOOL_EXECUTION_REQUESTED"] * 3
    assert {event["source"] for event in received} == {"crm.example"}


def test_emit_exits_zero_when_everything_was_accepted(
    tmp_path: Path, ingress: tuple[Any, str], capsys: pytest.CaptureFixture[str]
) -> None:
    sqs, url = ingress
    events = tmp_path / "events.json"
    events.write_text(json.dumps(json.loads(EVENTS.read_text().splitlines()[0]), indent=2))  # one document

    assert main(["emit", str(events)]) == 0

    assert "emitted 1 of 1 events to ingress" in capsys.readouterr().out
    (event,) = _received(sqs, url)
    assert event["source"] == "intentbus.cli"


def test_emit_to_an_unknown_bus_prints_one_line(
    tmp_path: Path, ingress: tuple[Any, str], capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(EVENTS.read_text().splitlines()[0] + "\n")

    assert main(["emit", str(events), "--bus", "nope"]) == 3  # configuration: no such bus

    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("intentbus: PutEvents to 'nope' failed: ")
    assert "ResourceNotFoundException" in lines[0]


def test_emit_without_a_bus_says_where_to_find_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("INGRESS_BUS_NAME", raising=False)
    assert main(["emit", str(EVENTS)]) == 3  # configuration
    assert capsys.readouterr().err.strip() == (
        "intentbus: no bus: pass --bus or set INGRESS_BUS_NAME (the stack's IngressBusName output)"
    )


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
            ["local", "run", "--events", "e.jsonl", "--redeploy", "Workflows"],
            "intentbus local run: argument --redeploy: expected NAME=VALUE, got 'Workflows'",
        ),
        (
            ["local", "run", "--events", "e.jsonl", "--then-events", "f.jsonl"],
            "intentbus: --then-events needs --redeploy or --redeploy-template",
        ),
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
