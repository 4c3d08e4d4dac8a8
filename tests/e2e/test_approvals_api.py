"""The approvals API and console over HTTP on the local cloud; expiry on its virtual clock."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.approvals import ALL_PENDING_BY
from intentbus.state import Status
from intentbus.workflows.incident import workflow as incident
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud
from intentbus_local.http_front import HttpFront, LocalUser
from tests.e2e.conftest import waiting_in_production

TENANT = "org_enterprise_alpha"


@pytest.fixture
def waiting(tmp_path: Path) -> Iterator[tuple[LocalCloud, DynamoWorkflowStore]]:
    with waiting_in_production(tmp_path) as cloud:
        yield cloud, DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())


def front(cloud: LocalCloud, user: LocalUser) -> HttpFront:
    return HttpFront(
        cloud.template, lambda fn, event: cloud.invoke(fn, event).response, user, cloud.clock.now
    )


def call(
    url: str, method: str = "GET", body: dict[str, Any] | None = None, *, token: str | None = None
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": token} if token else {})}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as error:
        raw, status = error.read().decode(), error.code
    try:
        return status, json.loads(raw)
    except json.JSONDecodeError:
        return status, raw


def test_a_person_approves_over_the_api_and_the_run_completes(
    waiting: tuple[LocalCloud, DynamoWorkflowStore],
) -> None:
    cloud, store = waiting
    ann = LocalUser(email="ann@example.com", tenant_id=TENANT)
    api = front(cloud, ann)
    token = api.session_token
    try:
        base = f"{api.url}/v1/tenants/{TENANT}/approvals"
        status, page = call(f"{api.url}/v1/console?tenant={TENANT}")
        assert status == 200
        assert "Pending approvals" in page
        status, listing = call(base, token=token)
        assert status == 200
        (pending,) = listing["approvals"]
        assert pending["command"]["type"] == "scale_service"
        assert pending["rationale"].startswith("scale checkout-api from 2 to 4")
        assert "proposers" not in pending
        url = f"{base}/{pending['approval_id']}/approve"
        status, answer = call(url, "POST", {"reason": "looks right"}, token=token)
        assert (status, answer["answer"]) == (200, "approved")
        assert (answer["approval"]["decided_by"], answer["approval"]["decided_by_label"]) == (
            ann.subject,
            "ann@example.com",
        )
        assert "announced" not in answer["approval"]
        assert store.due_approvals(ALL_PENDING_BY) == []  # published, so out of the sweep's index
        cloud.run_until_idle(max_invocations=100)
        # A replay of the same request: the same answer, no second effect.
        status, again = call(url, "POST", {}, token=token)
        assert (status, again["reason"]) == (200, f"already approved by ann@example.com ({ann.subject})")
    finally:
        api.close()
    (run,) = store.runs(TENANT)
    assert run.status is Status.COMPLETED
    assert seed.desired_count(cloud.clients) == 4


def test_another_tenants_person_finds_nothing(waiting: tuple[LocalCloud, DynamoWorkflowStore]) -> None:
    """Attack: globex's approver, signed in at the front, approves alpha's approval over HTTP."""
    cloud, store = waiting
    (approval,) = store.pending_approvals(TENANT)
    api = front(cloud, LocalUser(email="eve@globex.example", tenant_id="globex"))
    try:
        url = f"{api.url}/v1/tenants/{TENANT}/approvals/{approval.approval_id}/approve"
        status, answer = call(url, "POST", {}, token=api.session_token)
    finally:
        api.close()
    assert (status, answer) == (404, "")
    (run,) = store.runs(TENANT)
    assert run.status is Status.AWAITING_APPROVAL
    assert [e for e in store.entries(TENANT, run.run_id) if e.stage == "approval-attempt"] == []


def test_expiry_fires_on_the_virtual_clock_and_a_late_approval_gets_409(
    waiting: tuple[LocalCloud, DynamoWorkflowStore],
) -> None:
    cloud, store = waiting
    (approval,) = store.pending_approvals(TENANT)
    cloud.clock.advance(incident.approval_timeout.total_seconds() - 60)
    early = cloud.run_until_idle(max_invocations=100)
    assert early.invocations["ExpireApprovalsFunction"] == 1
    assert store.pending_approvals(TENANT) != []
    cloud.clock.advance(timedelta(minutes=2).total_seconds())
    late = cloud.run_until_idle(max_invocations=100)
    assert late.invocations["ExpireApprovalsFunction"] == 1

    (run,) = store.runs(TENANT)
    assert (run.status, run.reason) == (
        Status.DENIED,
        f"no decision before {approval.expires_at.isoformat()}",
    )
    api = front(cloud, LocalUser(email="ann@example.com", tenant_id=TENANT))
    try:
        url = f"{api.url}/v1/tenants/{TENANT}/approvals/{approval.approval_id}/approve"
        status, answer = call(url, "POST", {}, token=api.session_token)
    finally:
        api.close()
    assert (status, answer["answer"]) == (409, "expired")
    assert seed.desired_count(cloud.clients) == 2
