"""``intentbus local run --ingress rabbitmq``: what it cannot do is told in one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from intentbus_cli.main import main
from intentbus_local.rabbitmq_server import free_port

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "infra" / "events" / "sample.jsonl"


def test_an_unreachable_broker_is_one_line_without_its_password(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"amqp://guest:hunter2@127.0.0.1:{free_port()}/"
    argv = ["local", "run", "--template", str(REPO / "template.yaml"), "--events", str(EVENTS)]
    status = main([*argv, "--ingress", "rabbitmq", "--rabbitmq-url", url])
    err = capsys.readouterr().err.strip().splitlines()
    assert status != 0
    assert err[-1].startswith("intentbus: cannot reach RabbitMQ at 127.0.0.1:")
    assert "hunter2" not in "\n".join(err)
    assert "Traceback" not in "\n".join(err)


def test_a_template_without_the_amazon_mq_ingress_is_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = tmp_path / "template.yaml"
    text = (REPO / "template.yaml").read_text().replace("  MqBrokerArn:\n", "  OtherBrokerArn:\n", 1)
    template.write_text(text)
    argv = ["local", "run", "--template", str(template), "--events", str(EVENTS), "--ingress", "rabbitmq"]
    assert main(argv) != 0
    assert "declares no Amazon MQ ingress" in capsys.readouterr().err


def test_rabbitmq_ingress_does_not_take_a_redeploy(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["local", "run", "--events", str(EVENTS), "--ingress", "rabbitmq", "--redeploy", "Environment=x"]
    assert main(argv) == 2
    assert "no --built or --redeploy" in capsys.readouterr().err
