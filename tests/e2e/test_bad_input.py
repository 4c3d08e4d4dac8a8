"""Bad input is quarantined with its reason and never fails its batch; a poison record fails alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status
from intentbus_local.cloud import LocalCloud
from intentbus_local.lambda_runtime import Invocation
from tests.botocore_calls import Call, CallLog, recording
from tests.fakes import raw_body

SEED = json.loads((Path(__file__).parents[2] / "infra" / "events" / "seed_tool_call.json").read_text())


def tool_call(customer_id: str, **changes: Any) -> dict[str, Any]:
    envelope: dict[str, Any] = json.loads(json.dumps(SEED))
    envelope["run_id"] = f"run_{customer_id}"
    envelope["idempotency_key"] = f"idem_{customer_id}"
    envelope["payload"]["parameters"]["customer_id"] = customer_id
    envelope.update(changes)
    return envelope


def crm_status(cloud: LocalCloud, customer_id: str, tenant_id: str = SEED["tenant_id"]) -> str | None:
    key = {"tenant_id": {"S": tenant_id}, "customer_id": {"S": customer_id}}
    item = cloud.clients.dynamodb().get_item(TableName=cloud.topology.tables["CrmTable"], Key=key).get("Item")
    return None if item is None else item["status"]["S"]


def batches(cloud: LocalCloud, function: str) -> list[Invocation]:
    seen: list[Invocation] = []
    cloud.add_observer(
        lambda invocation: seen.append(invocation) if invocation.function_logical_id == function else None
    )
    return seen


def test_malformed_events_are_quarantined_and_their_neighbours_succeed(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    missing_tenant = tool_call("cust_b")
    del missing_tenant["tenant_id"]
    wrong_type = tool_call("cust_c")
    wrong_type["payload"]["parameters"]["status"] = 42
    bodies = [
        raw_body(tool_call("cust_a"), detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example"),
        raw_body(missing_tenant, detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example"),
        raw_body(wrong_type, detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example"),
        "this is not JSON {",
        raw_body(tool_call("cust_d"), detail_type="TOOL_EXECUTION_REQUESTED", source="crm.example"),
    ]
    validate = batches(cloud, "ValidateFunction")
    cloud.clients.sqs().send_message_batch(
        QueueUrl=cloud.topology.queues["ValidateQueue"].url,
        Entries=[{"Id": str(n), "MessageBody": body} for n, body in enumerate(bodies)],
    )
    cloud.run_until_idle(max_invocations=100)

    assert len(validate[0].event["Records"]) == 5
    assert validate[0].response == {"batchItemFailures": []}
    assert (crm_status(cloud, "cust_a"), crm_status(cloud, "cust_d")) == ("qualified", "qualified")
    assert store.state("org_enterprise_alpha", "run_cust_a").status is Status.COMPLETED  # type: ignore[union-attr]
    reasons = sorted(message.json()["reason"] for message in cloud.queue_messages("QuarantineQueue"))
    assert len(reasons) == 3
    assert reasons[0].startswith("body is not JSON")
    assert reasons[1].startswith("payload.parameters.status: Input should be 'lead', 'qualified'")
    assert reasons[2].startswith("tenant_id: Field required")
    assert crm_status(cloud, "cust_b") is None
    assert crm_status(cloud, "cust_c") is None


def test_a_record_that_keeps_failing_is_retried_alone_then_dead_lettered(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    def throttle_poison(call: Call) -> Exception | None:
        if call.operation == "PutItem" and "run_poison" in json.dumps(
            call.params.get("Item", {}), default=repr
        ):
            return ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}},
                "PutItem",
            )
        return None

    validate = batches(cloud, "ValidateFunction")
    envelopes = [tool_call("cust_x"), tool_call("poison"), tool_call("cust_y")]
    with recording(CallLog(), faults=(throttle_poison,)):
        cloud.put_events(
            [
                {
                    "Source": "crm.example",
                    "DetailType": "TOOL_EXECUTION_REQUESTED",
                    "Detail": json.dumps(envelope),
                }
                for envelope in envelopes
            ]
        )
        cloud.run_until_idle(max_invocations=100)

    deliveries: dict[str, int] = {}
    for invocation in validate:
        for record in invocation.event["Records"]:
            detail = json.loads(record["body"])["detail"]
            if detail.get("event_type") == "TOOL_EXECUTION_REQUESTED":
                deliveries[detail["run_id"]] = deliveries.get(detail["run_id"], 0) + 1
    assert deliveries == {"run_cust_x": 1, "run_poison": 5, "run_cust_y": 1}
    assert len(validate[0].event["Records"]) == 3
    (dead,) = cloud.queue_messages("ValidateDLQ")
    assert dead.json()["detail"]["run_id"] == "run_poison"
    assert (crm_status(cloud, "cust_x"), crm_status(cloud, "cust_y")) == ("qualified", "qualified")
    assert store.state("org_enterprise_alpha", "run_poison") is None
    assert "ProvisionedThroughputExceededException" in cloud.log_path("ValidateFunction").read_text()
