"""The approvals API attacked on the local cloud: each docstring says the attack, the asserts the answer.

One stack for the module: the incident run waits for its scale-up's approval and a ping-pong run is
paused at its depth limit. Every attack here is refused, so each test also checks that nothing moved
and that the victim's log did not grow. Requests go through the local front's dispatcher, which plays
API Gateway and its authorizers (the HTTP front's own checks are attacked in test_local_front.py).
"""

from __future__ import annotations

import json
import logging
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.approval_record import Approval
from intentbus.state import Status
from intentbus_local.cloud import LocalCloud
from intentbus_local.http_front import ApiDispatcher, LocalUser
from tests import pingpong_workflow
from tests.e2e.conftest import waiting_in_production

ALPHA = "org_enterprise_alpha"
PINGPONG = "acme"
RUN = "run-rally"
WORKFLOWS = f"intentbus.workflows.incident,intentbus.workflows.direct_tool,{pingpong_workflow.WORKFLOWS}"

ALICE = LocalUser(email="alice@alpha.example", tenant_id=ALPHA)
"""An approver of alpha."""
EVE = LocalUser(email="eve@globex.example", tenant_id="globex")
"""An approver of another tenant."""
BOB = LocalUser(email="bob@alpha.example", tenant_id=ALPHA, groups=())
"""A user of alpha who is not an approver."""
ACME = LocalUser(email="ann@acme.example", tenant_id=PINGPONG)


@dataclass(frozen=True)
class ForgedClaims(LocalUser):
    """A user whose token says exactly ``forged``."""

    forged: tuple[tuple[str, str], ...] = ()

    def claims(self) -> dict[str, str]:
        return dict(self.forged)


@dataclass
class Stack:
    cloud: LocalCloud
    store: DynamoWorkflowStore
    api: ApiDispatcher
    approval: Approval
    roles: dict[str, str]

    def call(
        self, method: str, path: str, body: Any = None, *, user: LocalUser = ALICE, raw: str | None = None
    ) -> tuple[int, Any]:
        text = raw if raw is not None else (None if body is None else json.dumps(body))
        status, _, payload = self.api.handle(
            method, f"/v1{path}", {}, text, {"Content-Type": "application/json"}, user=user
        )
        answer = payload.decode()
        return status, json.loads(answer) if answer else ""

    def footprint(self) -> tuple[Any, ...]:
        """Both runs' states and log lengths: an attack must leave them as they were."""
        (incident,) = self.store.runs(ALPHA)
        paused = self.store.state(PINGPONG, RUN)
        assert paused is not None
        return (
            incident.status,
            incident.version,
            len(self.store.entries(ALPHA, incident.run_id)),
            paused.status,
            paused.version,
            len(self.store.entries(PINGPONG, RUN)),
        )


def approvals_of(tenant: str, approval_id: str = "") -> str:
    return f"/tenants/{tenant}/approvals" + (f"/{approval_id}" if approval_id else "")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    with waiting_in_production(tmp_path_factory.mktemp("attacks"), workflows=WORKFLOWS) as cloud:
        envelope = {"id": "evt-rally", "tenant_id": PINGPONG, "run_id": RUN, "type": "Ping", "payload": {}}
        envelope["payload"] = {"rally": 0}
        cloud.put_events([{"Source": "tests.example", "DetailType": "Ping", "Detail": json.dumps(envelope)}])
        assert cloud.run_until_idle(max_invocations=200).idle
        store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        (approval,) = store.pending_approvals(ALPHA)
        state = store.state(PINGPONG, RUN)
        assert state is not None
        assert state.status is Status.PAUSED
        api = ApiDispatcher(
            cloud.template, lambda fn, event: cloud.invoke(fn, event).response, ALICE, cloud.clock.now
        )
        resources = cloud.clients("cloudformation").list_stack_resources(StackName=cloud.topology.stack_name)
        roles = {
            summary["LogicalResourceId"]: summary["PhysicalResourceId"]
            for summary in resources["StackResourceSummaries"]
            if summary["ResourceType"] == "AWS::IAM::Role"
        }
        yield Stack(cloud, store, api, approval, roles)


def session_of(stack: Stack, role_logical_id: str) -> LocalUser:
    """A caller signed as a session of one of the stack's roles (as API Gateway's IAM auth names it)."""
    arn = f"arn:aws:sts::123456789012:assumed-role/{stack.roles[role_logical_id]}/session-1"
    return LocalUser(email="-", tenant_id=ALPHA, caller_arn=arn)


# ------------------------------------------------------------------------------ another tenant


def test_another_tenants_approver_reads_nothing(stack: Stack) -> None:
    """Attack: globex's approver lists, shows and lists the paused runs of alpha (and of acme)."""
    before = stack.footprint()
    for path in (
        approvals_of(ALPHA),
        approvals_of(ALPHA, stack.approval.approval_id),
        f"/tenants/{ALPHA}/reviews",
        f"/tenants/{PINGPONG}/reviews",
    ):
        assert stack.call("GET", path, user=EVE) == (404, "")
    assert stack.footprint() == before


def test_another_tenants_approver_decides_twenty_times_and_leaves_no_trace(stack: Stack) -> None:
    """Attack: globex's approver POSTs approve (and reject) on alpha's approval 20 times: before, a 403
    carried the whole approval and each attempt grew alpha's log."""
    before = stack.footprint()
    url = approvals_of(ALPHA, stack.approval.approval_id)
    for _ in range(10):
        assert stack.call("POST", f"{url}/approve", {"reason": "mine now"}, user=EVE) == (404, "")
        assert stack.call("POST", f"{url}/reject", {"reason": "mine now"}, user=EVE) == (404, "")
    assert stack.footprint() == before


def test_another_tenants_approver_resumes_and_cancels_nothing(stack: Stack) -> None:
    """Attack: alpha's approver resumes acme's paused run with a huge budget, then cancels it."""
    before = stack.footprint()
    runs = f"/tenants/{PINGPONG}/reviews/{RUN}"
    assert stack.call("POST", f"{runs}/resume", {"reason": "go", "max_depth": 9999}) == (404, "")
    assert stack.call("POST", f"{runs}/cancel", {"reason": "stop"}) == (404, "")
    assert stack.footprint() == before


def test_an_unknown_id_and_another_tenants_id_look_the_same(stack: Stack) -> None:
    """Attack: tell which approval ids exist by comparing answers (a 403 used to mean 'exists')."""
    unknown = str(uuid.uuid4())
    mine = stack.call("POST", f"{approvals_of(ALPHA, unknown)}/approve", {})
    theirs = stack.call("POST", f"{approvals_of(ALPHA, stack.approval.approval_id)}/approve", {}, user=EVE)
    assert mine == theirs == (404, "")


# ------------------------------------------------------------------------------ who may decide


def test_a_user_of_the_tenant_who_is_not_an_approver_gets_403(stack: Stack) -> None:
    """Attack: bob, a user of alpha outside the approvers group, lists, approves and resumes."""
    before = stack.footprint()
    url = approvals_of(ALPHA, stack.approval.approval_id)
    for method, path, body in (
        ("GET", approvals_of(ALPHA), None),
        ("GET", url, None),
        ("POST", f"{url}/approve", {"reason": "me too"}),
        ("GET", f"/tenants/{ALPHA}/reviews", None),
    ):
        status, answer = stack.call(method, path, body, user=BOB)
        assert (status, answer) == (
            403,
            {"message": f"bob@alpha.example is not an approver of tenant {ALPHA}"},
        )
    assert stack.footprint() == before


@pytest.mark.parametrize(
    ("forged", "reason"),
    [
        ((("email", "alice@alpha.example"), ("custom:tenant_id", ALPHA)), "the token has no sub claim"),
        ((("sub", "a1"), ("cognito:groups", "approvers")), "the token has no custom:tenant_id claim"),
        ((("sub", "a1"), ("custom:tenant_id", ALPHA), ("cognito:groups", "approvers-globex")), None),
        ((("sub", "a1"), ("custom:tenant_id", ALPHA), ("cognito:groups", "Approvers")), None),
        ((), "the token has no sub claim"),
    ],
)
def test_claims_missing_or_forged_are_403(
    stack: Stack, forged: tuple[tuple[str, str], ...], reason: str | None
) -> None:
    """Attack: a token without sub or tenant, or with a group that merely looks like approvers."""
    before = stack.footprint()
    user = ForgedClaims(email="-", tenant_id=ALPHA, forged=forged)
    status, answer = stack.call(
        "POST", f"{approvals_of(ALPHA, stack.approval.approval_id)}/approve", {}, user=user
    )
    assert status == 403
    assert answer["message"] == (reason or f"a1 is not an approver of tenant {ALPHA}")
    assert stack.footprint() == before


def test_identity_in_the_body_is_refused_by_name(stack: Stack) -> None:
    """Attack: name the approver, the tenant or the decider in the body."""
    url = f"{approvals_of(ALPHA, stack.approval.approval_id)}/approve"
    for field in ("approver", "tenant_id", "decided_by", "sub"):
        status, answer = stack.call("POST", url, {"reason": "x", field: "alice"})
        assert status == 400
        assert answer["errors"] == [{"field": f"body.{field}", "message": "Extra inputs are not permitted"}]


def test_the_decide_role_cannot_approve_its_own_proposal(stack: Stack) -> None:
    """Attack: decide's role, signing on the IAM route, approves what decide proposed (it got 200), 5x."""
    before = stack.footprint()
    robot = session_of(stack, "DecideFunctionRole")
    path = f"/programs{approvals_of(ALPHA, stack.approval.approval_id)}/approve"
    for _ in range(5):
        status, answer = stack.call("POST", path, {"reason": "I said so"}, user=robot)
        assert (status, answer["answer"]) == (403, "forbidden")
    (run,) = stack.store.runs(ALPHA)
    assert run.status is Status.AWAITING_APPROVAL
    attempts = [e for e in stack.store.entries(ALPHA, run.run_id) if e.stage == "approval-attempt"]
    assert len(attempts) == 1  # five refusals, one entry
    assert stack.footprint()[3:] == before[3:]


def test_a_stage_role_cannot_resume_a_paused_run(stack: Stack) -> None:
    """Attack: record's role, on the IAM route, resumes the paused run with a raised budget."""
    robot = session_of(stack, "RecordFunctionRole")
    robot = LocalUser(email="-", tenant_id=PINGPONG, caller_arn=robot.caller_arn)
    path = f"/programs/tenants/{PINGPONG}/reviews/{RUN}/resume"
    status, answer = stack.call("POST", path, {"reason": "more", "max_depth": 50}, user=robot)
    assert (status, answer["answer"]) == (403, "forbidden")
    state = stack.store.state(PINGPONG, RUN)
    assert state is not None
    assert state.status is Status.PAUSED


# ------------------------------------------------------------------------------ bad requests


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ("{", "body"),
        ("[1, 2]", "body"),
        ('"approve"', "body"),
        ('{"reason": 5}', "body.reason"),
        (json.dumps({"reason": "x" * 1001}), "body.reason"),
    ],
)
def test_malformed_bodies_are_400_naming_the_field(stack: Stack, raw: str, field: str) -> None:
    """Attack: a body that is not JSON, an array, a string, a reason of the wrong type or too long
    (each was a 502)."""
    before = stack.footprint()
    status, answer = stack.call("POST", f"{approvals_of(ALPHA, stack.approval.approval_id)}/approve", raw=raw)
    assert status == 400
    assert answer["errors"][0]["field"] == field
    assert stack.footprint() == before


def test_reviews_validate_their_bodies(stack: Stack) -> None:
    """Attack: resume without a reason, with a negative limit, a version that is not a number."""
    runs = f"/tenants/{PINGPONG}/reviews/{RUN}"
    cases = [
        ({"max_depth": 9}, "body.reason"),
        ({"reason": "x", "max_depth": -1}, "body.max_depth"),
        ({"reason": "x", "version": "latest"}, "body.version"),
        ({"reason": "x", "deadline_hours": 0}, "body.deadline_hours"),
    ]
    for body, field in cases:
        status, answer = stack.call("POST", f"{runs}/resume", body, user=ACME)
        assert (status, answer["errors"][0]["field"]) == (400, field)
    assert stack.call("POST", f"{runs}/cancel", None, user=ACME)[0] == 400


def test_a_rejection_without_a_reason_is_400(stack: Stack) -> None:
    """Attack: reject with an empty (or blank) reason."""
    status, answer = stack.call(
        "POST", f"{approvals_of(ALPHA, stack.approval.approval_id)}/reject", {"reason": " "}
    )
    assert (status, answer["field"]) == (400, "reason")


def test_an_oversize_body_is_413(stack: Stack) -> None:
    """Attack: a 1 MiB body."""
    url = f"{approvals_of(ALPHA, stack.approval.approval_id)}/approve"
    status, answer = stack.call("POST", url, raw=json.dumps({"reason": "x" * (1 << 20)}))
    assert (status, answer["message"]) == (413, "body: over 16384 bytes")


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (approvals_of(ALPHA, "not-an-id"), "path.approval_id"),
        (approvals_of(ALPHA, "../../globex/approvals"), None),
        (approvals_of("-alpha"), "path.tenant"),
        (f"/tenants/{PINGPONG}/reviews/%3Cscript%3E/cancel", "path.run_id"),
    ],
)
def test_bad_path_parameters_are_400_or_404(stack: Stack, path: str, field: str | None) -> None:
    """Attack: path parameters that are not ids: traversal, markup, a bad tenant."""
    method = "POST" if path.endswith("/cancel") else "GET"
    status, answer = stack.call(method, path, {"reason": "x"} if method == "POST" else None)
    if field is None:
        assert status == 404  # no route has that shape
    else:
        assert (status, answer["errors"][0]["field"]) == (400, field)


def test_every_answer_carries_the_security_headers(stack: Stack) -> None:
    """Attack: sniff or frame an answer of the API (refusals included)."""
    for user, status in ((ALICE, 200), (EVE, 404), (BOB, 403)):
        got, headers, _ = stack.api.handle("GET", f"/v1{approvals_of(ALPHA)}", {}, None, {}, user=user)
        assert got == status
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Referrer-Policy"] == "no-referrer"
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
