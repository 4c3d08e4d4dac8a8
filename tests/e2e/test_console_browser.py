"""A person in headless Chromium opens the local console, clicks approve, and the run recovers."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.http_front import HttpFront, LocalUser
from tests.e2e.conftest import waiting_in_production

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TENANT = "org_enterprise_alpha"
# As this machine needs: no sandbox as root, and no background calls to a network that is not there.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[str, LocalCloud]]:
    with waiting_in_production(tmp_path) as cloud:
        front = HttpFront(
            cloud.template,
            lambda fn, e: cloud.invoke(fn, e).response,
            LocalUser(email="ann@example.com", tenant_id=TENANT),
            cloud.clock.now,
        )
        try:
            yield f"{front.url}/v1/console?tenant={TENANT}", cloud
        finally:
            front.close()


def test_clicking_approve_in_the_console_completes_the_recovery(
    console: tuple[str, LocalCloud], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    url, cloud = console
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(url)
            approve = page.locator("button.approve")
            approve.wait_for(timeout=15_000)
            assert "scale_service" in page.locator(".approval h2").inner_text()
            assert "desired_count" in page.locator(".approval pre").first.inner_text()
            page.screenshot(path=str(tmp_path / "console.png"))
            approve.click()
            page.locator("#status").filter(has_text="approved").wait_for(timeout=15_000)
            page.locator("#empty").wait_for(timeout=15_000)
        finally:
            browser.close()

    cloud.run_until_idle(max_invocations=100)
    store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
    (run,) = store.runs(TENANT)
    assert run.status is Status.COMPLETED
    published = [output.type for entry in store.entries(TENANT, run.run_id) for output in entry.outputs]
    assert "RecoveryCompleted" in published
    assert seed.desired_count(cloud.clients) == 4
