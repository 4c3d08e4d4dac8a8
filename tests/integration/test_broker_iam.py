"""The broker ingress functions' roles allow every call they made, and their facts pass the bus policy.

Both brokers configured at once; each function is invoked with its documented event (an accepted input,
the same again, a poison record, an unbound tenant), claim checks forced on so S3 is exercised too.
"""

from __future__ import annotations

import base64
import json
import logging
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from intentbus_local import rabbitmq_ingress, seed
from intentbus_local.cloud import LocalCloud
from tests.botocore_calls import CallLog, recording
from tests.call_requests import decide, logical_names, requests_of
from tests.iam_eval import Decision
from tests.integration.test_template_iam import denied_calls
from tests.template_policies import TemplatePolicies

KAFKA = {
    "KafkaClusterArn": "arn:aws:kafka:us-east-1:123456789012:cluster/orders/751d2973-2",
    "KafkaTopics": "incidents",
    "KafkaAuthentication": "SASL_SCRAM_512_AUTH",
    "KafkaAuthSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka-scram",
}
BROKERS = ("KafkaIngressFunction", "RabbitMqIngressFunction")


def b64(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


@pytest.fixture(scope="module")
def exercised() -> Iterator[tuple[LocalCloud, CallLog, dict[str, str]]]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    queue = "incidents"
    parameters = {**rabbitmq_ingress.stack_parameters(queue), **KAFKA, "ClaimCheckThresholdBytes": "1024"}
    parameters["BrokerBindings"] += "; kafka:incidents=org_enterprise_alpha from monitoring.example"
    with LocalCloud(mode="inprocess", parameters=parameters) as cloud:
        good, other = seed.latency_event(event_id="evt-k"), seed.latency_event(event_id="evt-r")
        unbound = seed.latency_event(event_id="evt-u", tenant_id="org_other")
        kafka = {
            "eventSource": "aws:kafka",
            "eventSourceArn": KAFKA["KafkaClusterArn"],
            "bootstrapServers": "b-1.orders.kafka.us-east-1.amazonaws.com:9096",
            "records": {
                "incidents-0": [
                    {
                        "topic": "incidents",
                        "partition": 0,
                        "offset": offset,
                        "timestamp": 1545084650987,
                        "timestampType": "CREATE_TIME",
                        "value": value,
                        "headers": [],
                    }
                    for offset, value in enumerate([b64(good), b64(good), "!poison", b64(unbound)])
                ]
            },
        }
        rmq = {
            "eventSource": "aws:rmq",
            "eventSourceArn": parameters["MqBrokerArn"],
            "rmqMessagesByQueue": {
                f"{queue}::/": [
                    {"basicProperties": {"messageId": f"m-{n}"}, "redelivered": False, "data": data}
                    for n, data in enumerate([b64(other), b64(other), "!poison"])
                ]
            },
        }
        with recording(CallLog()) as log:
            for function, event in zip(BROKERS, (kafka, rmq), strict=True):
                invocation = cloud.invoke(function, event)
                assert not invocation.failed, invocation.error
        yield cloud, log, parameters


def test_every_call_the_broker_ingress_made_is_allowed_by_its_role(
    exercised: tuple[LocalCloud, CallLog, dict[str, str]],
) -> None:
    cloud, log, _ = exercised
    denied = denied_calls(cloud, log)
    assert not denied, "\n".join(denied)
    function_of = {info.name: logical for logical, info in cloud.topology.functions.items()}
    assert {function_of[call.function] for call in log.calls} == set(BROKERS)
    operations = {(call.service, call.operation) for call in log.calls}
    assert {("sqs", "SendMessage"), ("events", "PutEvents"), ("s3", "PutObject")} <= operations


def test_every_fact_the_broker_ingress_published_passes_its_role_condition_and_the_bus_policy(
    exercised: tuple[LocalCloud, CallLog, dict[str, str]],
) -> None:
    cloud, log, parameters = exercised
    template = TemplatePolicies(cloud.template.cloudformation, parameters)
    logical = logical_names(cloud.topology)
    function_of = {info.name: lid for lid, info in cloud.topology.functions.items()}
    puts = [c for c in log.calls if (c.service, c.operation) == ("events", "PutEvents")]
    refused: list[str] = []
    for call in puts:
        role = f"{function_of[call.function]}Role"
        for request in requests_of(call, template.arn(role), template, logical):
            decision = decide(request, template.identity_policies(role), template)
            if decision is not Decision.ALLOW:
                refused.append(f"{role}: PutEvents {dict(request.context)}: {decision.value}")
    assert not refused, "\n".join(refused)
    assert {function_of[c.function] for c in puts} == set(BROKERS)
