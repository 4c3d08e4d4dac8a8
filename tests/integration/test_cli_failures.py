"""Every failure of the intentbus command: one line, ``intentbus: <message>``, and a status per kind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws

from intentbus.errors import ConfigurationError, MalformedInput, NotRecorded
from intentbus.producer import SendError, SendReport
from intentbus_cli.failures import ExitStatus, explain
from intentbus_cli.main import main

SAMPLE = Path(__file__).parents[2] / "infra" / "events" / "sample.jsonl"
DESK = ["--table", "no-such-table", "--bus", "intentbus", "--tenant", "acme"]


@pytest.fixture
def aws(fake_aws_credentials: None) -> Iterator[None]:
    with mock_aws():
        boto3.client("events").create_event_bus(Name="ingress")
        yield


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _no_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in (
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(name, raising=False)


def test_emit_to_a_bus_that_does_not_exist(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "one.jsonl"
    events.write_text(SAMPLE.read_text().splitlines()[0] + "\n")

    assert main(["emit", str(events), "--bus", "nope"]) == ExitStatus.CONFIGURATION
    line = _one_line(capsys)
    assert line.startswith("intentbus: PutEvents to 'nope' failed: ")
    assert "ResourceNotFoundException" in line


def test_local_run_with_an_array_of_non_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = tmp_path / "events.json"
    events.write_text(json.dumps([{"tenant_id": "acme"}, 7, "x"]))

    assert main(["local", "run", "--events", str(events)]) == ExitStatus.BAD_INPUT
    assert _one_line(capsys) == f"intentbus: {events}[1]: expected a JSON object, not int"


def test_emit_with_an_array_of_non_objects_refuses_each_and_sends_nothing(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "events.json"
    events.write_text(json.dumps([7, "x"]))

    assert main(["emit", str(events), "--bus", "ingress"]) == ExitStatus.FAILED
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"{events}[0]: an envelope is a JSON object, not a int",
        f"{events}[1]: an envelope is a JSON object, not a str",
    ]
    assert out.strip() == "emitted 0 of 2 events to ingress; 2 refused"


@pytest.mark.parametrize("command", [["approvals", *DESK, "list"], ["review", *DESK, "list"]])
def test_a_desk_on_a_table_that_does_not_exist(
    aws: None, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(command) == ExitStatus.CONFIGURATION
    assert _one_line(capsys) == (
        "intentbus: Query: ResourceNotFoundException: Requested resource not found "
        "(check the names given: --table, --bus, --queue or --stack)"
    )


def test_approving_on_a_table_that_does_not_exist(aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["approvals", *DESK, "approve", "apr-1"]) == ExitStatus.CONFIGURATION
    assert _one_line(capsys).startswith("intentbus: GetItem: ResourceNotFoundException: ")


@pytest.mark.parametrize(
    "command",
    [
        ["approvals", *DESK, "list"],
        ["runs", "list", *DESK[:2], "--tenant", "acme"],
        ["emit", str(SAMPLE), "--bus", "ingress"],
    ],
)
def test_no_region(
    command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_profile(monkeypatch, tmp_path)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)

    assert main(command) == ExitStatus.CONFIGURATION
    assert _one_line(capsys) == (
        "intentbus: no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION) or a region in your AWS profile"
    )


@pytest.mark.parametrize("command", [["approvals", *DESK, "list"], ["review", *DESK, "list"]])
def test_no_credentials(
    command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_profile(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)

    assert main(command) == ExitStatus.CONFIGURATION
    assert _one_line(capsys).startswith("intentbus: no AWS credentials: ")


def _raised_by_stub(code: str, message: str) -> ClientError:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    )
    with Stubber(client) as stub:
        stub.add_client_error("query", service_error_code=code, service_message=message)
        with pytest.raises(ClientError) as raised:
            client.query(TableName="t", KeyConditionExpression="pk = :p")
    return raised.value


@pytest.mark.parametrize(
    ("code", "status", "hint"),
    [
        ("AccessDeniedException", ExitStatus.CONFIGURATION, "(the caller's AWS identity may not do this)"),
        ("ResourceNotFoundException", ExitStatus.CONFIGURATION, "(check the names given"),
        ("ProvisionedThroughputExceededException", ExitStatus.AWS, ""),
    ],
)
def test_an_aws_error_is_told_by_its_code(code: str, status: ExitStatus, hint: str) -> None:
    failure = explain(_raised_by_stub(code, "told by AWS"))

    assert failure is not None
    assert failure.status is status
    assert failure.line.startswith(f"intentbus: Query: {code}: told by AWS")
    assert hint in failure.line


def test_the_library_errors_are_routed_by_their_code_not_their_message() -> None:
    cases = [
        (ConfigurationError("x"), ExitStatus.CONFIGURATION),
        (MalformedInput("x"), ExitStatus.BAD_INPUT),
        (NotRecorded("x"), ExitStatus.BAD_INPUT),
        (SendError("x", report=SendReport(accepted=(), refused=()), unsent=()), ExitStatus.AWS),
    ]
    for error, status in cases:
        failure = explain(error)
        assert failure is not None
        assert (failure.status, failure.line) == (status, f"intentbus: {error}")


def test_a_bug_keeps_its_traceback() -> None:
    assert explain(AttributeError("a bug")) is None
    assert explain(KeyError("a bug")) is None
