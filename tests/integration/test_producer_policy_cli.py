"""``intentbus producer policy``: the policy it prints, where it reads the ingress bus, its bad input."""

from __future__ import annotations

import json

import pytest

from intentbus.producers import ProducerBindings
from intentbus_cli.main import main
from tests.integration.conftest_moto import aws, client  # noqa: F401

ARN = "arn:aws:events:us-east-1:123456789012:event-bus/intentbus-ingress-intentbus"
STACK_TEMPLATE = {
    "Resources": {"IngressBus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": "ingress"}}},
    "Outputs": {"IngressBusArn": {"Value": {"Fn::GetAtt": ["IngressBus", "Arn"]}}},
}


def run(argv: list[str]) -> int:
    try:
        return main(["producer", "policy", *argv])
    except SystemExit as exit_:
        return int(str(exit_.code))


def test_it_prints_the_policy_and_the_binding_to_add(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--source", "crm.example", "--tenant", "acme", "--ingress-bus-arn", ARN]) == 0
    printed = capsys.readouterr()
    (statement,) = json.loads(printed.out)["Statement"]
    assert statement == {
        "Sid": "PutOwnEventsOnTheIntentbusIngress",
        "Effect": "Allow",
        "Action": "events:PutEvents",
        "Resource": ARN,
        "Condition": {"StringEquals": {"events:source": "crm.example"}},
    }
    entry = printed.err.splitlines()[0].rsplit(": ", 1)[1]
    assert entry == "crm.example=acme"
    assert ProducerBindings.parse(entry).allows(
        account="123456789012", source="crm.example", tenant_id="acme", own_account="123456789012"
    )


@pytest.mark.usefixtures("aws")
def test_it_reads_the_ingress_bus_from_the_stack(capsys: pytest.CaptureFixture[str]) -> None:
    client("cloudformation").create_stack(StackName="ib", TemplateBody=json.dumps(STACK_TEMPLATE))
    assert run(["--source", "crm.example", "--tenant", "acme", "--stack", "ib"]) == 0
    (statement,) = json.loads(capsys.readouterr().out)["Statement"]
    assert statement["Resource"].endswith(":event-bus/ingress")

    assert run(["--source", "crm.example", "--tenant", "acme", "--stack", "missing"]) == 3  # configuration
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("intentbus: cannot read stack missing: ")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--tenant", "acme", "--ingress-bus-arn", ARN], "the following arguments are required: --source"),
        (["--source", "intentbus.pipeline", "--tenant", "acme", "--ingress-bus-arn", ARN], "is reserved"),
        (["--source", "intentbus.workflow", "--tenant", "acme", "--ingress-bus-arn", ARN], "is reserved"),
        (["--source", "aws.ecs", "--tenant", "acme", "--ingress-bus-arn", ARN], "is reserved"),
        (["--source", "a=b", "--tenant", "acme", "--ingress-bus-arn", ARN], "is not a source"),
        (["--source", "crm.example", "--tenant", "a|b", "--ingress-bus-arn", ARN], "is not a tenant id"),
        (["--source", "crm.example", "--tenant", "acme", "--ingress-bus-arn", "bus"], "not an event bus ARN"),
        (["--source", "crm.example", "--tenant", "acme"], "pass --ingress-bus-arn ARN or --stack NAME"),
        (
            ["--source", "crm.example", "--tenant", "acme", "--ingress-bus-arn", ARN, "--stack", "s"],
            "not allowed with argument",
        ),
    ],
)
def test_a_bad_argument_prints_one_line_and_exits_2(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("INTENTBUS_STACK", raising=False)
    assert run(argv) == 2
    printed = capsys.readouterr()
    (line,) = printed.err.strip().splitlines()
    assert line.startswith("intentbus producer policy: ")
    assert expected in line
    assert printed.out == ""
