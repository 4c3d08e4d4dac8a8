"""The repair section of the console in headless Chromium: a person sees a parked input (markup in it
stays text), edits its payload and resubmits it, and the run it was meant to start completes."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from intentbus.adapters.dynamodb_park import DynamoParkStore
from intentbus.parked import ParkStatus
from intentbus_local.cloud import LocalCloud
from intentbus_local.http_front import HttpFront, LocalUser
from tests.e2e.test_console_browser import CHROMIUM, CHROMIUM_ARGS, SCRIPT, XSS
from tests.stubbed_bedrock import MODEL

FIXTURE = Path(__file__).parent / "fixture_functions" / "repair_stubbed"
TENANT = "acme"


@pytest.fixture
def parked_front(tmp_path: Path) -> Iterator[tuple[LocalCloud, HttpFront]]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    MODEL.reset()
    parameters = {"RepairQuarantined": "on", "BedrockModelId": "anthropic.claude-3-5-haiku-20241022-v1:0"}
    with LocalCloud(
        mode="server",
        logs_dir=tmp_path / "logs",
        parameters=parameters,
        code_dirs={"RepairFunction": FIXTURE},
    ) as cloud:
        MODEL.answer_with([{"text": XSS}], stop="end_turn")
        event = {
            "id": "crm-console-1",
            "type": "TOOL_EXECUTION_REQUESTED",
            "source": "crm.example",
            "tenant_id": TENANT,
            "subject": XSS,
            "payload": {
                "tool_name": "crm_record_upsert",
                "parameters": {"customer_id": XSS, "status": "lead"},
            },
        }
        cloud.put_events(
            [{"Source": "crm.example", "DetailType": event["type"], "Detail": json.dumps(event)}]
        )
        cloud.run_until_idle(max_invocations=30)
        front = HttpFront(
            cloud.template,
            lambda fn, e: cloud.invoke(fn, e).response,
            LocalUser(email="ann@example.com", tenant_id=TENANT),
            cloud.clock.now,
        )
        try:
            yield cloud, front
        finally:
            front.close()
            MODEL.stubber.assert_no_pending_responses()


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def test_a_person_edits_a_parked_input_in_the_console_and_its_run_completes(
    parked_front: tuple[LocalCloud, HttpFront], browser: Any, tmp_path: Path
) -> None:
    """Attack too: markup in the producer's fields and in the model's answer is shown as text."""
    cloud, front = parked_front
    parks = DynamoParkStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
    (parked,) = parks.waiting(TENANT)
    page = browser.new_page()
    page.goto(front.console_url(TENANT))
    card = page.locator(".repair")
    card.wait_for(timeout=15_000)
    page.screenshot(path=str(tmp_path / "repair.png"), full_page=True)
    assert page.evaluate("window.__xss") is None
    assert page.locator("img").count() == 0
    text = card.inner_text()
    assert "TOOL_EXECUTION_REQUESTED · from crm.example" in text
    assert "model_garbage" in text
    assert text.count(SCRIPT) >= 2  # the subject and the customer id, as the producer sent them
    edited = json.loads(card.locator("textarea.payload").input_value())
    edited["parameters"]["customer_id"] = "cust-console"
    card.locator("textarea.payload").fill(json.dumps(edited))
    card.locator("button.resubmit").click()
    page.locator("#status").filter(has_text="resubmitted as").wait_for(timeout=15_000)
    page.locator("#repairs-empty").wait_for(timeout=15_000)

    cloud.run_until_idle(max_invocations=60)
    item = cloud.clients.dynamodb().get_item(
        TableName=cloud.topology.tables["CrmTable"],
        Key={"tenant_id": {"S": TENANT}, "customer_id": {"S": "cust-console"}},
    )
    assert item["Item"]["status"]["S"] == "lead"
    settled = parks.get(TENANT, parked.park_id)
    assert settled is not None
    assert settled.status is ParkStatus.RESUBMITTED
