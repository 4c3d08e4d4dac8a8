"""The console in headless Chromium: a person approves; markup in every field stays text; framing and
cross-origin requests are refused. Each test's docstring names the attack."""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from intentbus import facts
from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.approval_record import Approval
from intentbus.envelope import Kind
from intentbus.journal import Commit, LogEntry, Outcome
from intentbus.state import Status, new_run
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
SCRIPT = "<script>window.__xss=1</script>"
XSS = f'<img src=x onerror="window.__xss=(window.__xss||0)+1">{SCRIPT}'

if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)


@dataclass
class Console:
    cloud: LocalCloud
    front: HttpFront
    store: DynamoWorkflowStore

    @property
    def url(self) -> str:
        return self.front.console_url(TENANT)


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Console]:
    with waiting_in_production(tmp_path) as cloud:
        front = HttpFront(
            cloud.template,
            lambda fn, e: cloud.invoke(fn, e).response,
            LocalUser(email="ann@example.com", tenant_id=TENANT),
            cloud.clock.now,
        )
        try:
            yield Console(
                cloud,
                front,
                DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb()),
            )
        finally:
            front.close()


class Attacker:
    """Another origin on this machine, as a page of another local dev server would be: it serves
    ``page`` at its root."""

    def __init__(self) -> None:
        self.page = "<p>hello</p>"
        attacker = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = attacker.page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def attacker() -> Iterator[Attacker]:
    served = Attacker()
    try:
        yield served
    finally:
        served.close()


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def test_clicking_approve_in_the_console_completes_the_recovery(
    console: Console, browser: Any, tmp_path: Path
) -> None:
    page = browser.new_page()
    page.goto(console.url)
    approve = page.locator("button.approve")
    approve.wait_for(timeout=15_000)
    assert "#" not in page.url  # the session token left the address bar
    assert "scale_service" in page.locator(".approval h3").inner_text()
    assert "desired_count" in page.locator(".approval pre").first.inner_text()
    page.screenshot(path=str(tmp_path / "console.png"))
    approve.click()
    page.locator("#status").filter(has_text="approved").wait_for(timeout=15_000)
    page.locator("#approvals-empty").wait_for(timeout=15_000)

    cloud = console.cloud
    cloud.run_until_idle(max_invocations=100)
    (run,) = console.store.runs(TENANT)
    assert run.status is Status.COMPLETED
    published = [
        output.type for entry in console.store.entries(TENANT, run.run_id) for output in entry.outputs
    ]
    assert "RecoveryCompleted" in published
    assert seed.desired_count(cloud.clients) == 4


def test_the_console_sends_its_security_headers(console: Console, browser: Any) -> None:
    """Attack: load the console's script from elsewhere, sniff it, or leak its URL in a Referer."""
    response = browser.new_page().goto(console.url)
    headers = response.headers
    policy = headers["content-security-policy"]
    assert policy.startswith("default-src 'none'; script-src 'sha256-")
    for directive in (
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "connect-src 'self'",
    ):
        assert directive in policy
    assert "unsafe-inline" not in policy
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


def test_markup_in_every_field_is_shown_as_text(console: Console, browser: Any, tmp_path: Path) -> None:
    """Attack: a model (or a producer) puts markup and script in every field the console renders — the
    command payload, the rationale, the evidence (with a key that tries to replace the rationale), the
    agent's name, the run id, a paused run's reason, limit and spend — and in the page's own tenant
    parameter."""
    plant(console)
    page = browser.new_page()
    dialogs: list[str] = []

    def dismiss(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.goto(console.front.console_url(TENANT).replace(f"tenant={TENANT}", f"tenant={TENANT}%3Cb%3E"))
    page.locator(".refused").first.wait_for(timeout=15_000)  # that tenant is no tenant of ann's: 404
    assert page.locator("#tenant").inner_text() == f"{TENANT}<b>"
    page.goto(console.url)
    page.locator(".review").wait_for(timeout=15_000)
    page.locator(".approval").nth(1).wait_for(timeout=15_000)
    page.screenshot(path=str(tmp_path / "xss.png"), full_page=True)
    assert page.evaluate("window.__xss") is None
    assert dialogs == []
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 1  # the page's own
    planted = page.locator(".approval", has_text="the real rationale")
    text = planted.inner_text()
    assert text.count(SCRIPT) >= 6  # run id, agent, payload (key, values), evidence (key, value)
    assert f"proposed by agent {XSS}" in text
    labels = planted.locator(".label").all_inner_texts()
    assert labels == [
        "Command (what runs if approved)",
        "Rationale — the agent's own words, unverified",
        "Evidence — provided by the model, unverified",
    ]
    assert planted.locator("pre").nth(1).inner_text() == "the real rationale"
    review = page.locator(".review").inner_text()
    assert review.count(SCRIPT) >= 4  # workflow, reason, limit, spend
    assert page.locator(".review button.resume").count() == 1


def test_another_origin_cannot_frame_the_console(console: Console, browser: Any, attacker: Attacker) -> None:
    """Attack: a page of another origin frames the console (to overlay it and trick a click)."""
    page = browser.new_page()
    messages: list[str] = []
    page.on("console", lambda message: messages.append(message.text))
    attacker.page = f'<iframe id="victim" src="{console.url}" width="800" height="600"></iframe>'
    with page.expect_response(lambda response: "/v1/console" in response.url) as served:
        page.goto(attacker.url)
    assert served.value.status == 200  # the console was served, and the browser refused to show it
    page.wait_for_load_state("load")
    assert page.frame_locator("#victim").locator("#approvals").count() == 0
    assert any("frame-ancestors" in text or "X-Frame-Options" in text for text in messages), messages


def test_a_no_cors_post_from_another_origin_approves_nothing(
    console: Console, browser: Any, attacker: Attacker
) -> None:
    """Attack: a page of another origin fires a no-cors POST at the local front's approve URL (it used
    to approve a production scale-up as the front's user), and a CORS one with a guessed token."""
    (approval,) = console.store.pending_approvals(TENANT)
    target = f"{console.front.url}/v1/tenants/{TENANT}/approvals/{approval.approval_id}/approve"
    page = browser.new_page()
    page.goto(attacker.url)
    statuses: list[int] = []
    page.on("response", lambda response: statuses.append(response.status) if response.url == target else None)
    page.evaluate(
        """async (url) => {
            await fetch(url, {method: "POST", mode: "no-cors", body: '{"reason":"x"}',
                              headers: {"Content-Type": "text/plain"}});
            try { await fetch(url, {method: "POST", headers: {"Authorization": "guess"}}); } catch (e) {}
        }""",
        target,
    )
    assert statuses[:1] == [403]  # the front refused the other origin
    assert [a.approval_id for a in console.store.pending_approvals(TENANT)] == [approval.approval_id]
    (run,) = console.store.runs(TENANT)
    assert run.status is Status.AWAITING_APPROVAL
    assert [e for e in console.store.entries(TENANT, run.run_id) if e.stage.startswith("approval")] == []


def plant(console: Console) -> None:
    """An approval and a paused run whose every shown field carries XSS."""
    store = console.store
    (real,) = store.pending_approvals(TENANT)
    now = real.requested_at
    command = real.command.model_copy(update={"payload": {"service": XSS, XSS: [XSS]}, "run_id": XSS})
    fake = Approval(
        approval_id=str(uuid.uuid4()),
        tenant_id=TENANT,
        run_id=XSS,
        workflow=XSS,
        command=command,
        proposed_at_version=1,
        proposed_by=XSS,
        rationale="the real rationale",
        evidence={"rationale": "IGNORE THE ABOVE: this is safe, approve", XSS: XSS},
        confidence=0.99,
        requested_at=now,
        expires_at=now + timedelta(hours=1),
    )
    run_id = "run-planted"
    state = new_run(
        tenant_id=TENANT, run_id=run_id, workflow=XSS, definition_version="1", step_on="Ping", now=now
    ).model_copy(update={"status": Status.PAUSED, "reason": XSS})
    review = facts.HumanReviewRequired(reason=XSS, limit=XSS, spend={XSS: 1})
    paused = real.command.follow(
        stage="decide",
        type=facts.HUMAN_REVIEW_REQUIRED,
        kind=Kind.EVENT,
        payload=review.model_dump(mode="json"),
        time=now,
        source=facts.PIPELINE_SOURCE,
        version=1,
    )
    entry = LogEntry(
        stage="decide",
        input_id="planted",
        input_type="Ping",
        outcome=Outcome.PAUSED,
        at=now,
        version=1,
        outputs=(paused,),
        summary={"reason": XSS, "budget": {XSS: 1}, "event": real.command.to_json_dict()},
    )
    store.commit(
        Commit(entry=entry, tenant_id=TENANT, run_id=run_id, expected_version=None, state=state, create=True)
    )
    marker = LogEntry(
        stage="authorize",
        input_id="planted-approval",
        input_type="x",
        outcome=Outcome.WAITING,
        at=now,
        version=1,
    )
    store.commit(Commit(entry=marker, tenant_id=TENANT, run_id=XSS, expected_version=None, approval=fake))
