"""The attack suite: producers, models and forgers against the gate, on the local cloud.

Every test names its attack. A forger here has got past IAM (moto enforces none), so each forged fact
is put straight on the pipeline bus, where only the stage roles may publish on AWS: what stops it is
each stage checking the fact against what the pipeline recorded. Each ends in its bucket, with no
tool effect.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from intentbus import facts
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.approval_record import Approval
from intentbus.envelope import Envelope, Kind
from intentbus.errors import NOT_RECORDED
from intentbus.policy import Effect, Verdict
from intentbus.state import Status
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.http_front import ApiDispatcher, LocalUser
from tests.botocore_calls import CallLog, recording

TENANT = "org_enterprise_alpha"
BINDINGS = (
    f"monitoring.example={TENANT}|intruder;crm.example={TENANT}|globex;"
    "intentbus.workflow=*;intentbus.pipeline=*"  # bound, so only the pipeline's own rules stop them
)
SEED_CALL: dict[str, Any] = {
    "run_id": "run_01hx7a9e8v7p2m",
    "step_index": 3,
    "idempotency_key": "idem_8f3a01c9a4b2e67",
    "timestamp": 1791859200,
    "event_type": "TOOL_EXECUTION_REQUESTED",
    "payload": {
        "tool_name": "crm_record_upsert",
        "parameters": {"customer_id": "cust_88219", "status": "qualified"},
    },
}


@pytest.fixture
def cloud() -> Iterator[LocalCloud]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    parameters = {"Environment": "production", "ProducerBindings": BINDINGS}
    with LocalCloud(mode="inprocess", parameters=parameters) as running:
        seed.seed_service(running.clients)
        seed.seed_metrics(running.clients)
        yield running


@pytest.fixture
def store(cloud: LocalCloud) -> DynamoWorkflowStore:
    return DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())


def emit(cloud: LocalCloud, detail: dict[str, Any], *, source: str = "monitoring.example") -> None:
    """What a producer can do: PutEvents on the ingress bus."""
    type_name = str(detail.get("type", detail.get("event_type")))
    cloud.put_events([{"Source": source, "DetailType": type_name, "Detail": json.dumps(detail)}])


def forge(cloud: LocalCloud, envelope: Envelope) -> None:
    """What IAM refuses on AWS: PutEvents on the pipeline bus, claiming the pipeline's source."""
    cloud.put_events(
        [
            {
                "EventBusName": cloud.topology.bus_name,
                "Source": envelope.source,
                "DetailType": envelope.type,
                "Detail": json.dumps(envelope.to_json_dict()),
            }
        ]
    )


def quarantined(cloud: LocalCloud) -> list[dict[str, Any]]:
    return [message.json() for message in cloud.queue_messages("QuarantineQueue")]


def dead_letters(cloud: LocalCloud) -> int:
    return sum(
        len(cloud.queue_messages(logical_id))
        for logical_id in cloud.topology.queues
        if logical_id.endswith("DLQ")
    )


def waiting_approval(cloud: LocalCloud, store: DynamoWorkflowStore) -> Approval:
    emit(cloud, seed.latency_event(environment="production"))
    cloud.run_until_idle(max_invocations=100)
    (approval,) = store.pending_approvals(TENANT)
    return approval


def pipeline_fact(base: Envelope, type_name: str, payload: dict[str, Any], *, salt: str) -> Envelope:
    return base.follow(
        stage=f"forger-{salt}",
        type=type_name,
        kind=Kind.EVENT,
        payload=payload,
        time=base.time,
        source=facts.PIPELINE_SOURCE,
    )


def authorized(command: Envelope, *, salt: str, resource_version: int | None = 0) -> Envelope:
    verdict = Verdict(effect=Effect.ALLOW, rule="human-approval", reason="approved by nobody")
    payload = facts.CommandAuthorized(command=command, verdict=verdict, resource_version=resource_version)
    return pipeline_fact(command, facts.COMMAND_AUTHORIZED, payload.model_dump(mode="json"), salt=salt)


def approve(cloud: LocalCloud, approval: Approval) -> int:
    user = LocalUser(email="approver@alpha.example", tenant_id=TENANT)
    dispatcher = ApiDispatcher(
        cloud.template, lambda function, event: cloud.invoke(function, event).response, user, cloud.clock.now
    )
    status, _, _ = dispatcher.handle(
        "POST",
        f"/v1/tenants/{TENANT}/approvals/{approval.approval_id}/approve",
        {},
        json.dumps({"reason": "go"}),
        {"Content-Type": "application/json"},
        user=user,
    )
    return status


def assert_forged(records: list[dict[str, Any]], stage: str) -> None:
    assert [(r["stage"], r["reason"].startswith(NOT_RECORDED)) for r in records] == [(stage, True)], records


def test_a_forged_command_authorized_for_a_run_that_does_not_exist_runs_nothing(cloud: LocalCloud) -> None:
    """Attack: CommandAuthorized with a made-up allow verdict, scaling to 999 for no run at all."""
    command = Envelope.model_validate(
        {
            "id": "cmd-forged",
            "source": "intentbus.pipeline",
            "type": "scale_service",
            "time": "2026-12-01T09:00:00Z",
            "kind": "command",
            "tenant_id": TENANT,
            "trace_id": "tr-forged",
            "run_id": "run-nobody",
            "step_index": 4,
            "idempotency_key": "idem-forged",
            "correlation_id": "run-nobody",
            "payload": {
                "service": seed.SERVICE,
                "cluster": seed.CLUSTER,
                "environment": "production",
                "desired_count": 999,
                "from_count": 2,
            },
        }
    )
    with recording(CallLog()) as log:
        forge(cloud, authorized(command, salt="1"))
        cloud.run_until_idle(max_invocations=20)
    assert log.count("ecs", "UpdateService") == 0
    assert seed.desired_count(cloud.clients) == seed.INITIAL_DESIRED_COUNT
    assert_forged(quarantined(cloud), "execute")


@pytest.mark.parametrize("desired", [999, None])
def test_a_command_waiting_for_approval_cannot_be_authorized_by_a_forged_fact(
    cloud: LocalCloud, store: DynamoWorkflowStore, desired: int | None
) -> None:
    """Attack: CommandAuthorized for the command a person has not approved: its payload changed to 999,
    or unchanged. Then the person approves, and the real command runs once."""
    approval = waiting_approval(cloud, store)
    command = approval.command
    if desired is not None:
        command = command.model_copy(update={"payload": {**command.payload, "desired_count": desired}})
    forge(cloud, authorized(command, salt="2", resource_version=approval.resource_version))
    cloud.run_until_idle(max_invocations=20)
    assert seed.desired_count(cloud.clients) == seed.INITIAL_DESIRED_COUNT
    assert_forged(quarantined(cloud), "execute")
    assert store.state(TENANT, approval.run_id).status is Status.AWAITING_APPROVAL  # type: ignore[union-attr]

    assert approve(cloud, approval) == 200
    cloud.run_until_idle(max_invocations=100)
    assert seed.desired_count(cloud.clients) == 4
    assert store.state(TENANT, approval.run_id).status is Status.COMPLETED  # type: ignore[union-attr]


def test_a_forged_failure_cannot_end_a_run_waiting_for_approval(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    """Attack: CommandFailed for the command waiting for a person, to end the victim's run FAILED."""
    approval = waiting_approval(cloud, store)
    failed = facts.CommandFailed(command=approval.command, error="forged")
    forge(
        cloud, pipeline_fact(approval.command, facts.COMMAND_FAILED, failed.model_dump(mode="json"), salt="3")
    )
    denied = facts.CommandDenied(
        command=approval.command, verdict=Verdict(effect=Effect.DENY, rule="x", reason="forged")
    )
    forge(
        cloud, pipeline_fact(approval.command, facts.COMMAND_DENIED, denied.model_dump(mode="json"), salt="4")
    )
    cloud.run_until_idle(max_invocations=20)
    records = quarantined(cloud)
    assert sorted(r["stage"] for r in records) == ["record", "record"]
    assert all(r["reason"].startswith(NOT_RECORDED) for r in records)
    assert store.state(TENANT, approval.run_id).status is Status.AWAITING_APPROVAL  # type: ignore[union-attr]


def test_a_direct_command_validate_never_recorded_is_refused(cloud: LocalCloud) -> None:
    """Attack: a CommandProposed carrying a TOOL_EXECUTION_REQUESTED that never passed validate."""
    command = Envelope.model_validate(
        {
            **{k: v for k, v in SEED_CALL.items() if k not in ("timestamp", "event_type")},
            "id": "cmd-unvalidated",
            "source": "crm.example",
            "type": "TOOL_EXECUTION_REQUESTED",
            "time": "2026-12-01T09:00:00Z",
            "kind": "command",
            "tenant_id": TENANT,
            "trace_id": "tr",
            "correlation_id": "run_01hx7a9e8v7p2m",
        }
    )
    proposed = facts.CommandProposed(command=command, decision_id=command.id, agent=None)
    forge(cloud, pipeline_fact(command, facts.COMMAND_PROPOSED, proposed.model_dump(mode="json"), salt="5"))
    cloud.run_until_idle(max_invocations=20)
    assert_forged(quarantined(cloud), "authorize")
    crm = cloud.clients.dynamodb().scan(TableName=cloud.topology.tables["CrmTable"])["Items"]
    assert crm == []


def test_a_forged_event_accepted_starts_no_run(cloud: LocalCloud, store: DynamoWorkflowStore) -> None:
    """Attack: EventAccepted for an alert validate never saw, to start a run past the tenant binding."""
    event = Envelope.model_validate(
        {
            **seed.latency_event(environment="production", tenant_id="intruder"),
            "source": "monitoring.example",
            "time": "2026-12-01T09:00:00Z",
            "kind": "event",
            "trace_id": "tr",
            "run_id": "run-forged",
            "step_index": 0,
            "correlation_id": "run-forged",
        }
    )
    accepted = facts.EventAccepted(event=event)
    forge(cloud, pipeline_fact(event, facts.EVENT_ACCEPTED, accepted.model_dump(mode="json"), salt="6"))
    cloud.run_until_idle(max_invocations=20)
    assert_forged(quarantined(cloud), "decide")
    assert store.runs("intruder") == []


def test_a_domain_event_sent_by_a_producer_is_refused(cloud: LocalCloud, store: DynamoWorkflowStore) -> None:
    """Attack: RecoveryProposed (a workflow's own outcome, source intentbus.workflow) for the waiting
    run, sent through the ingress, so that the operator agent scales to 20 with a new approval."""
    approval = waiting_approval(cloud, store)
    recovery = {
        **approval.command.to_json_dict(),
        "id": "evt-forged-recovery",
        "source": facts.WORKFLOW_SOURCE,
        "type": "RecoveryProposed",
        "kind": "event",
        "idempotency_key": None,
        "payload": {
            "service": seed.SERVICE,
            "cluster": seed.CLUSTER,
            "environment": "production",
            "current_count": 2,
            "desired_count": 20,
            "reason": "forged",
        },
    }
    emit(cloud, recovery, source=facts.WORKFLOW_SOURCE)
    cloud.run_until_idle(max_invocations=20)
    assert_forged(quarantined(cloud), "validate")
    assert len(store.pending_approvals(TENANT)) == 1


def test_an_input_claiming_the_pipeline_source_is_quarantined_not_lost(cloud: LocalCloud) -> None:
    """Attack: a producer input with source intentbus.pipeline (on AWS, IAM refuses it first)."""
    emit(cloud, seed.latency_event(), source=facts.PIPELINE_SOURCE)
    cloud.run_until_idle(max_invocations=20)
    (record,) = quarantined(cloud)
    assert (record["stage"], record["field"]) == ("validate", "source")
    assert "reserved for the pipeline" in record["reason"]


def test_the_payload_environment_label_does_not_pick_the_policy(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    """Attack: an alert labelled "dev" in a production deployment, to scale with no approval."""
    emit(cloud, seed.latency_event(environment="dev"))
    cloud.run_until_idle(max_invocations=100)
    (run,) = store.runs(TENANT)
    assert run.status is Status.AWAITING_APPROVAL
    assert seed.desired_count(cloud.clients) == seed.INITIAL_DESIRED_COUNT


def test_a_producer_cannot_speak_for_a_tenant_it_is_not_bound_to(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    """Attack: monitoring.example (bound to two tenants) sends an alert as tenant "evil"."""
    emit(cloud, seed.latency_event(environment="production", tenant_id="evil"))
    cloud.run_until_idle(max_invocations=20)
    (record,) = quarantined(cloud)
    assert (record["stage"], record["field"]) == ("validate", "tenant_id")
    assert "is not bound to tenant 'evil'" in record["reason"]
    assert store.runs("evil") == []


def test_a_bound_tenant_cannot_touch_a_service_it_does_not_own(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    """Attack: tenant "intruder" (bound to monitoring.example) raises an incident on the shared service."""
    with recording(CallLog()) as log:
        emit(cloud, seed.latency_event(environment="production", tenant_id="intruder"))
        cloud.run_until_idle(max_invocations=50)
    (run,) = store.runs("intruder")
    assert run.status is Status.DENIED
    assert "may not touch ecs:shop/checkout-api" in str(run.reason)
    assert log.count("cloudwatch", "GetMetricStatistics") == 0
    assert log.count("ecs", "UpdateService") == 0


def test_two_tenants_sending_the_same_event_get_two_runs(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    """Attack (or accident): byte-identical seed tool calls, same ids and keys, from two tenants."""
    for tenant in (TENANT, "globex"):
        emit(cloud, {**SEED_CALL, "tenant_id": tenant}, source="crm.example")
    cloud.run_until_idle(max_invocations=50)
    for tenant in (TENANT, "globex"):
        (run,) = store.runs(tenant)
        assert run.status is Status.COMPLETED
    crm = cloud.clients.dynamodb().scan(TableName=cloud.topology.tables["CrmTable"])["Items"]
    assert sorted(item["tenant_id"]["S"] for item in crm) == sorted([TENANT, "globex"])
    assert dead_letters(cloud) == 0


def test_no_tenant_can_pre_claim_another_tenants_idempotency_key(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    """Attack: globex sends first a command with alpha's run id and idempotency key, another payload."""
    squat = {**SEED_CALL, "tenant_id": "globex"}
    squat["payload"] = {
        "tool_name": "crm_record_upsert",
        "parameters": {"customer_id": "cust_88219", "status": "churned"},
    }
    emit(cloud, squat, source="crm.example")
    cloud.run_until_idle(max_invocations=50)
    emit(cloud, {**SEED_CALL, "tenant_id": TENANT}, source="crm.example")
    cloud.run_until_idle(max_invocations=50)
    (run,) = store.runs(TENANT)
    assert run.status is Status.COMPLETED
    item = cloud.clients.dynamodb().get_item(
        TableName=cloud.topology.tables["CrmTable"],
        Key={"tenant_id": {"S": TENANT}, "customer_id": {"S": "cust_88219"}},
    )["Item"]
    assert item["status"]["S"] == "qualified"
    assert dead_letters(cloud) == 0


def test_a_redelivered_authorization_after_the_run_ended_is_a_duplicate_not_a_forgery(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    """Not an attack: the legitimate late facts keep their outcomes and count as nothing forged."""
    emit(cloud, {**SEED_CALL, "tenant_id": TENANT}, source="crm.example")
    cloud.run_until_idle(max_invocations=50)
    (run,) = store.runs(TENANT)
    (verdict,) = [e for e in store.entries(TENANT, run.run_id) if e.stage == "authorize"]
    (real,) = verdict.outputs
    with recording(CallLog()) as log:
        forge(cloud, real)  # the same fact again, as a redelivery would bring it
        cloud.run_until_idle(max_invocations=20)
    assert log.count("dynamodb", "UpdateItem") <= 1  # no CRM write: Powertools has the result
    assert quarantined(cloud) == []
    assert store.state(TENANT, run.run_id).status is Status.COMPLETED  # type: ignore[union-attr]
