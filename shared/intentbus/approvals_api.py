"""The approvals REST API on Powertools' Event Handler: list, show, approve, reject, and the console.

Who decides comes from API Gateway's authorizer, never from the request body: a Cognito user
pool's claims for people (``custom:tenant_id`` names their tenant), IAM for programs (the caller's
ARN; IAM policy on the ``/programs/tenants/{tenant}`` path fences the tenant).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import BadRequestError, NotFoundError, UnauthorizedError

from intentbus.approvals import ApprovalDesk, Approver, Result
from intentbus.journal import Approval

PEOPLE = "/tenants/<tenant>/approvals"
PROGRAMS = "/programs/tenants/<tenant>/approvals"


def approver(app: APIGatewayRestResolver, tenant: str) -> Approver:
    context = app.current_event.request_context
    claims: dict[str, Any] = (
        (context.authorizer.raw_event or {}).get("claims") or {} if context.authorizer else {}
    )
    if claims:
        who = claims.get("email") or claims.get("cognito:username") or claims.get("sub")
        if not who:
            raise UnauthorizedError("the token names no user")
        return Approver(id=str(who), tenant_id=str(claims.get("custom:tenant_id", "")), via="cognito")
    caller = context.identity.user_arn
    if caller:
        return Approver(id=caller, tenant_id=tenant, via="iam")
    raise UnauthorizedError("no authenticated caller")


def _view(approval: Approval) -> dict[str, Any]:
    # ``announced`` is the expiry sweep's bookkeeping, nothing an approver acts on
    return approval.model_dump(mode="json", exclude={"announced"})


def _answer(result: Result) -> Response[str]:
    body = {
        "answer": result.answer.value,
        "reason": result.reason,
        "approval": None if result.approval is None else _view(result.approval),
    }
    return Response(
        status_code=result.http_status, content_type=content_types.APPLICATION_JSON, body=json.dumps(body)
    )


def build(desk: Callable[[], ApprovalDesk]) -> APIGatewayRestResolver:
    app = APIGatewayRestResolver()

    def listing(tenant: str) -> dict[str, Any]:
        who = approver(app, tenant)
        if who.tenant_id != tenant:
            return {"approvals": [], "reason": f"{who.id} is not of tenant {tenant}"}
        return {"approvals": [_view(approval) for approval in desk().pending(tenant)]}

    def showing(tenant: str, approval_id: str) -> dict[str, Any]:
        who = approver(app, tenant)
        found = desk().show(tenant, approval_id) if who.tenant_id == tenant else None
        if found is None:
            raise NotFoundError(f"no approval {approval_id} for tenant {tenant}")
        return _view(found)

    def deciding(tenant: str, approval_id: str, *, approve: bool) -> Response[str]:
        body = app.current_event.json_body if app.current_event.body else {}
        reason = str((body or {}).get("reason", "")).strip()
        if not approve and not reason:
            raise BadRequestError("a rejection needs a reason")
        result = desk().decide(
            tenant_id=tenant,
            approval_id=approval_id,
            approver=approver(app, tenant),
            approve=approve,
            reason=reason,
        )
        return _answer(result)

    for prefix in (PEOPLE, PROGRAMS):
        app.get(prefix)(listing)
        app.get(f"{prefix}/<approval_id>")(showing)
        app.post(f"{prefix}/<approval_id>/approve")(
            lambda tenant, approval_id: deciding(tenant, approval_id, approve=True)
        )
        app.post(f"{prefix}/<approval_id>/reject")(
            lambda tenant, approval_id: deciding(tenant, approval_id, approve=False)
        )

    @app.get("/console")
    def console() -> Response[str]:
        page = resources.files("intentbus.console").joinpath("index.html").read_text(encoding="utf-8")
        return Response(status_code=200, content_type=content_types.TEXT_HTML, body=page)

    return app
