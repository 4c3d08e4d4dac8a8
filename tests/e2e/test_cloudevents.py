"""A CloudEvent from another system, sent with the official SDK, runs a seed workflow to completion.

Its extension and its trace context stay on every fact the pipeline publishes for it; its id, longer
than a DynamoDB sort key holds in UTF-8, is hashed where a key is derived from it.
"""

from __future__ import annotations

import json

from cloudevents.conversion import to_structured
from cloudevents.http import CloudEvent

from intentbus import facts
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.extensions import RUN_ENDED
from intentbus.state import Status
from intentbus_local.cloud import LocalCloud
from tests.e2e.test_bad_input import crm_status

TENANT = "org_enterprise_alpha"
RUN = "run_cloudevent_1"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
LONG_ID = "crm.example/requests/" + "é" * 600  # 1,221 bytes in UTF-8


def test_a_cloudevent_with_an_extension_and_a_traceparent_runs_to_completion(
    cloud: LocalCloud, store: DynamoWorkflowStore
) -> None:
    event = CloudEvent(
        {
            "type": "TOOL_EXECUTION_REQUESTED",
            "source": "crm.example",
            "id": LONG_ID,
            "tenantid": TENANT,
            "runid": RUN,
            "comexampleorigin": "crm-eu-1",
            "traceparent": TRACEPARENT,
        },
        {"tool_name": "crm_record_upsert", "parameters": {"customer_id": "cust_ce_1", "status": "customer"}},
    )
    _, structured = to_structured(event)
    cloud.put_events([{"Source": "crm.example", "DetailType": event["type"], "Detail": structured.decode()}])
    assert cloud.run_until_idle(max_invocations=100).idle

    assert cloud.queue_messages("QuarantineQueue") == []
    assert crm_status(cloud, "cust_ce_1", TENANT) == "customer"
    state = store.state(TENANT, RUN)
    assert state is not None
    assert state.status is Status.COMPLETED
    published = [output for entry in store.entries(TENANT, RUN) for output in entry.outputs]
    assert facts.WORKFLOW_COMPLETED in {output.type for output in published}
    for output in published:
        # the run's last outcome also marked so, for the bus to send it to no stage
        last = {RUN_ENDED: True} if output.type == "TOOL_EXECUTION_COMPLETED" else {}
        assert output.extensions == {"comexampleorigin": "crm-eu-1", **last}, output.type
        assert output.traceparent == TRACEPARENT, output.type
    proposed = next(output for output in published if output.type == facts.COMMAND_PROPOSED)
    command = facts.CommandProposed.model_validate(proposed.payload).command
    assert command.id == LONG_ID
    assert json.loads(structured)["comexampleorigin"] == command.extensions["comexampleorigin"]
