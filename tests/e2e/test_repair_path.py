"""The repair path on the local cloud: RepairQuarantined on, the model a botocore Stubber.

A producer sends a request validate refuses (a status the CRM does not know). The repair function asks
the model once; what becomes of the input depends on the answer: repaired and run, or parked for a
person who resubmits it (console API, CLI) or discards it. Nothing is asked twice, and nothing is lost.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from intentbus.adapters.dynamodb_park import DynamoParkStore
from intentbus.ids import derive_id
from intentbus.parked import Parked, ParkStatus
from intentbus_cli.main import main
from intentbus_local.api_events import rest_request
from intentbus_local.cloud import LocalCloud
from intentbus_local.sqs_event import lambda_sqs_event
from tests.stubbed_bedrock import MODEL

FIXTURE = Path(__file__).parent / "fixture_functions" / "repair_stubbed"
BUDGET = 2


def broken(event_id: str, tenant: str = "acme", status: str = "prospect") -> dict[str, Any]:
    return {
        "id": event_id,
        "type": "TOOL_EXECUTION_REQUESTED",
        "source": "crm.example",
        "tenant_id": tenant,
        "payload": {
            "tool_name": "crm_record_upsert",
            "parameters": {"customer_id": event_id, "status": status},
        },
    }


def repaired(event: dict[str, Any], status: str = "lead") -> dict[str, Any]:
    fixed: dict[str, Any] = json.loads(json.dumps(event))
    fixed["payload"]["parameters"]["status"] = status
    return fixed


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    parameters = {
        "RepairQuarantined": "on",
        "RepairBudgetPerHour": str(BUDGET),
        "BedrockModelId": "anthropic.claude-3-5-haiku-20241022-v1:0",
    }
    with LocalCloud(
        mode="server",
        logs_dir=tmp_path_factory.mktemp("logs"),
        parameters=parameters,
        code_dirs={"RepairFunction": FIXTURE},
    ) as running:
        yield running


@pytest.fixture
def model() -> Iterator[Any]:
    MODEL.reset()
    yield MODEL
    MODEL.stubber.assert_no_pending_responses()


@pytest.fixture
def cli(cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The CLI's environment (the local cloud's region and credentials) and its --stack/--endpoint-url."""
    for name, value in cloud.clients.handler_environment().items():
        monkeypatch.setenv(name, value)
    return ["--stack", cloud.topology.stack_name, "--endpoint-url", str(cloud.endpoint_url)]


@pytest.fixture
def parks(cloud: LocalCloud) -> DynamoParkStore:
    return DynamoParkStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())


def send(cloud: LocalCloud, *events: dict[str, Any]) -> None:
    cloud.put_events(
        [{"Source": e["source"], "DetailType": e["type"], "Detail": json.dumps(e)} for e in events]
    )
    cloud.run_until_idle(max_invocations=60)


def crm_status(cloud: LocalCloud, tenant: str, customer: str) -> str | None:
    item = (
        cloud.clients.dynamodb()
        .get_item(
            TableName=cloud.topology.tables["CrmTable"],
            Key={"tenant_id": {"S": tenant}, "customer_id": {"S": customer}},
        )
        .get("Item")
    )
    return None if item is None else str(item["status"]["S"])


def the_parked(parks: DynamoParkStore, tenant: str, customer: str) -> Parked:
    (found,) = [p for p in parks.waiting(tenant) if customer in p.body]
    return found


def nothing_queued(cloud: LocalCloud) -> None:
    assert cloud.queue_depth("QuarantineQueue") == (0, 0, 0)
    assert cloud.queue_depth("QuarantineDLQ") == (0, 0, 0)


def api(cloud: LocalCloud, tenant_of_caller: str, method: str, path: str, body: Any = None) -> dict[str, Any]:
    parts = path.strip("/").split("/")
    resource = "/" + "/".join(
        "{tenant}" if i == 1 else "{park_id}" if i == 3 else part for i, part in enumerate(parts)
    )
    parameters = {"tenant": parts[1], **({"park_id": parts[3]} if len(parts) > 3 else {})}
    request = rest_request(
        method=method,
        path=path,
        resource=resource,
        path_parameters=parameters,
        stage="v1",
        now=cloud.clock.now(),
        claims={
            "sub": f"{tenant_of_caller}-ann",
            "custom:tenant_id": tenant_of_caller,
            "cognito:groups": "approvers",
        },
        body=None if body is None else json.dumps(body),
    )
    answer: dict[str, Any] = cloud.invoke("ApprovalsFunction", request).response
    return answer


def test_a_repaired_input_goes_back_through_validate_with_its_lineage_and_runs(
    cloud: LocalCloud, model: Any, parks: DynamoParkStore
) -> None:
    event = broken("cust-repaired")
    model.answer_with_repair(repaired(event))
    send(cloud, event)

    assert crm_status(cloud, "acme", "cust-repaired") == "lead"
    nothing_queued(cloud)
    (request,) = model.requests
    prompt = request["messages"][0]["content"][0]["text"]
    assert "status" in prompt
    assert "Input should be" in prompt
    schema = json.dumps(request["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"])
    assert '"customer"' in schema
    assert '"churned"' in schema
    (item,) = [p for p in parks.every("acme") if "cust-repaired" in p.body]
    assert item.status is ParkStatus.RESUBMITTED
    assert item.resubmitted_id == derive_id("cust-repaired", "repair")
    assert all("cust-repaired" not in p.body for p in parks.waiting("acme"))


def test_a_garbage_answer_is_parked_and_a_person_of_the_tenant_resubmits_it_in_the_console(
    cloud: LocalCloud, model: Any, parks: DynamoParkStore
) -> None:
    event = broken("cust-garbage", tenant="umbrella")
    model.answer_with([{"text": "I am sorry, I cannot help with that."}], stop="end_turn")
    send(cloud, event)

    nothing_queued(cloud)
    parked = the_parked(parks, "umbrella", "cust-garbage")
    assert parked.kind == "model_garbage"
    assert "no complete resubmit_event call" in parked.reason
    listing = api(cloud, "umbrella", "GET", "/tenants/umbrella/repairs")
    assert listing["statusCode"] == 200
    (shown,) = json.loads(listing["body"])["repairs"]
    assert shown["park_id"] == parked.park_id
    assert shown["kind"] == "model_garbage"
    assert shown["body"]["detail"]["payload"]["parameters"]["status"] == "prospect"

    fixed = repaired(event, status="qualified")["payload"]
    answer = api(
        cloud, "umbrella", "POST", f"/tenants/umbrella/repairs/{parked.park_id}/resubmit", {"payload": fixed}
    )
    assert answer["statusCode"] == 200, answer["body"]
    cloud.run_until_idle(max_invocations=60)
    assert crm_status(cloud, "umbrella", "cust-garbage") == "qualified"
    settled = parks.get("umbrella", parked.park_id)
    assert settled is not None
    assert settled.status is ParkStatus.RESUBMITTED
    assert settled.decided_by == "umbrella-ann"
    again = api(
        cloud, "umbrella", "POST", f"/tenants/umbrella/repairs/{parked.park_id}/resubmit", {"payload": fixed}
    )
    assert again["statusCode"] == 409
    assert len(model.requests) == 1


def test_an_edit_that_is_still_invalid_is_refused_naming_the_field_and_nothing_is_sent(
    cloud: LocalCloud, model: Any, parks: DynamoParkStore
) -> None:
    event = broken("cust-edit", tenant="umbrella")
    model.fail_with("ValidationException", 400)
    send(cloud, event)
    parked = the_parked(parks, "umbrella", "cust-edit")
    assert parked.kind == "model_error"
    path = f"/tenants/umbrella/repairs/{parked.park_id}/resubmit"
    still_bad = repaired(event, status="maybe")["payload"]
    answer = api(cloud, "umbrella", "POST", path, {"payload": still_bad})
    assert answer["statusCode"] == 400
    assert json.loads(answer["body"])["field"] == "payload.parameters.status"
    moved = api(cloud, "umbrella", "POST", path, {"detail": {**repaired(event), "tenant_id": "globex"}})
    assert moved["statusCode"] == 400
    assert "tenant_id" in json.loads(moved["body"])["message"]
    cloud.run_until_idle(max_invocations=20)
    assert crm_status(cloud, "umbrella", "cust-edit") is None
    assert the_parked(parks, "umbrella", "cust-edit").status is ParkStatus.PARKED


def test_a_person_of_another_tenant_cannot_see_resubmit_or_discard_a_parked_input(
    cloud: LocalCloud, model: Any, parks: DynamoParkStore
) -> None:
    event = broken("cust-fenced", tenant="hooli")
    model.fail_with()
    send(cloud, event)
    victim = the_parked(parks, "hooli", "cust-fenced")
    assert victim.kind == "model_error"
    assert "AccessDeniedException" in victim.reason

    # The attacker is an approver of globex: the victim's tenant in the path, or the victim's id in theirs.
    attacks = [
        ("GET", "/tenants/hooli/repairs", None),
        ("GET", f"/tenants/hooli/repairs/{victim.park_id}", None),
        (
            "POST",
            f"/tenants/hooli/repairs/{victim.park_id}/resubmit",
            {"payload": repaired(event)["payload"]},
        ),
        ("POST", f"/tenants/hooli/repairs/{victim.park_id}/discard", {"reason": "mine now"}),
        ("GET", f"/tenants/globex/repairs/{victim.park_id}", None),
        (
            "POST",
            f"/tenants/globex/repairs/{victim.park_id}/resubmit",
            {"payload": repaired(event)["payload"]},
        ),
        ("POST", f"/tenants/globex/repairs/{victim.park_id}/discard", {"reason": "mine now"}),
    ]
    for method, path, body in attacks:
        answer = api(cloud, "globex", method, path, body)
        assert (answer["statusCode"], answer["body"]) == (404, ""), (method, path)
    own = api(cloud, "globex", "GET", "/tenants/globex/repairs")
    assert json.loads(own["body"])["repairs"] == []
    cloud.run_until_idle(max_invocations=20)
    assert crm_status(cloud, "hooli", "cust-fenced") is None
    untouched = parks.get("hooli", victim.park_id)
    assert untouched is not None
    assert untouched.status is ParkStatus.PARKED
    assert untouched.decided_by is None


def test_a_still_invalid_repair_is_parked_with_the_proposal_and_discarded_with_the_cli(
    cloud: LocalCloud,
    model: Any,
    parks: DynamoParkStore,
    capsys: pytest.CaptureFixture[str],
    cli: list[str],
) -> None:
    event = broken("cust-invalid", tenant="initech")
    model.answer_with_repair(repaired(event, status="prospective"))
    send(cloud, event)

    nothing_queued(cloud)
    parked = the_parked(parks, "initech", "cust-invalid")
    assert (parked.kind, parked.field) == ("still_invalid", "payload.parameters.status")
    assert parked.proposal is not None
    assert "prospective" in parked.proposal
    where = cli
    assert main(["quarantine", "parked", "--tenant", "initech", *where]) == 0
    listed = capsys.readouterr().out
    assert parked.park_id in listed
    assert "still_invalid" in listed
    assert main(["quarantine", "repair", parked.park_id, "--discard", *where]) == 2
    assert capsys.readouterr().err.strip() == "intentbus: --discard needs --reason: say why it is dropped"
    reason = "a test customer; the CRM has no prospects"
    assert main(["quarantine", "repair", parked.park_id, "--discard", "--reason", reason, *where]) == 0
    settled = parks.get("initech", parked.park_id)
    assert settled is not None
    assert settled.status is ParkStatus.DISCARDED
    assert settled.decided_reason == reason
    assert settled.decided_by is not None
    assert main(["quarantine", "parked", "--tenant", "initech", *where]) == 0
    assert "0 parked input(s)" in capsys.readouterr().out


def test_past_the_tenants_budget_inputs_are_parked_without_asking_the_model(
    *,
    cloud: LocalCloud,
    model: Any,
    parks: DynamoParkStore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cli: list[str],
) -> None:
    events = [broken(f"cust-budget-{n}", tenant="wayne") for n in range(BUDGET + 1)]
    for _ in range(BUDGET):
        model.answer_with([{"text": "no"}], stop="end_turn")
    send(cloud, *events)

    nothing_queued(cloud)
    kinds = sorted(str(p.kind) for p in parks.waiting("wayne"))
    assert kinds == ["budget_exhausted"] + ["model_garbage"] * BUDGET
    assert len(model.requests) == BUDGET
    (spent,) = [p for p in parks.waiting("wayne") if p.kind == "budget_exhausted"]
    assert spent.reason == f"the tenant's repair budget ({BUDGET} an hour) is spent"

    # a person repairs it with the CLI, the tenant found among the parked inputs
    customer = next(e for e in events if e["id"] in spent.body)
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps(repaired(customer)["payload"]))
    where = cli
    assert main(["quarantine", "repair", spent.park_id, "--payload", str(payload), *where]) == 0
    assert "resubmitted as" in capsys.readouterr().out
    cloud.run_until_idle(max_invocations=60)
    assert crm_status(cloud, "wayne", customer["id"]) == "lead"


def test_a_redelivered_message_is_never_asked_about_twice(
    cloud: LocalCloud, model: Any, parks: DynamoParkStore
) -> None:
    event = broken("cust-crash", tenant="stark")
    model.answer_with_repair(repaired(event))
    model.crash_next = True  # the model is called, then the sandbox dies before its answer is read
    cloud.put_events([{"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event)}])
    summary = cloud.run_until_idle(max_invocations=60)

    assert summary.virtual_seconds_advanced > 700  # it came back after its visibility timeout (720 s)
    nothing_queued(cloud)
    parked = the_parked(parks, "stark", "cust-crash")
    assert parked.kind == "interrupted"
    assert len(model.requests) == 1
    assert crm_status(cloud, "stark", "cust-crash") is None
    model.reset()  # the queued answer was never read: the call it was for died with the sandbox

    # A redelivery of a message whose item is parked: the item stands, the model is not asked.
    record = {
        "stage": "validate",
        "reason": parked.quarantine_reason,
        "field": parked.field,
        "body": parked.body,
    }
    quarantine = cloud.topology.queues["QuarantineQueue"]
    redelivered = lambda_sqs_event(
        [
            {
                "MessageId": parked.park_id,
                "ReceiptHandle": "redelivered",
                "Body": json.dumps(record),
                "MD5OfBody": "",
                "Attributes": {"ApproximateReceiveCount": "3"},
            }
        ],
        queue_arn=quarantine.arn,
        region=cloud.topology.region,
        account_id=cloud.topology.account_id,
    )
    answer = cloud.invoke("RepairFunction", redelivered).response
    assert answer == {"batchItemFailures": []}
    assert model.requests == []
    assert parks.get("stark", parked.park_id) == parked
