"""The approvals REST API on Powertools' Event Handler: approvals, paused runs and the console.

Who acts comes from API Gateway's authorizer, never from the request (``intentbus.api_identity``), and
the tenant is checked before anything is read: another tenant's approval or run is a 404 with no
body. Bodies and path parameters are validated before a handler runs (``intentbus.api_bodies``); a
client's mistake is a 400 naming the field, a body over 16 KiB a 413, never a 5xx. Every answer carries
the security headers (``intentbus.console_page.API_HEADERS``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus import console_page
from intentbus.api_bodies import (
    APPROVAL_ID_PATTERN,
    MAX_BODY_BYTES,
    PARK_ID_PATTERN,
    RUN_ID_PATTERN,
    TENANT_ID_PATTERN,
    CancelBody,
    DecisionBody,
    DiscardBody,
    ResubmitBody,
    ResumeBody,
)
from intentbus.api_identity import Refused, caller
from intentbus.approval_record import Approval
from intentbus.approvals import ApprovalDesk, Approver
from intentbus.parked import park_view
from intentbus.repair_desk import DeskAnswer, RepairDesk
from intentbus.review import PausedRun, ReviewDesk
from intentbus.review import Result as ReviewResult
from intentbus.state import BudgetOverride

PEOPLE = "/tenants/<tenant>"
PROGRAMS = "/programs/tenants/<tenant>"

Tenant = Annotated[str, Path(pattern=TENANT_ID_PATTERN)]
ApprovalId = Annotated[str, Path(pattern=APPROVAL_ID_PATTERN)]
RunId = Annotated[str, Path(pattern=RUN_ID_PATTERN)]
ParkId = Annotated[str, Path(pattern=PARK_ID_PATTERN)]


class ApprovalsResolver(APIGatewayRestResolver):
    """Powertools' REST resolver, with validation on, a body size limit and the security headers."""

    def __init__(self) -> None:
        super().__init__(enable_validation=True)

    def resolve(self, event: Mapping[str, Any], context: LambdaContext | None) -> dict[str, Any]:
        body = event.get("body") or ""
        if len(str(body).encode()) > MAX_BODY_BYTES:
            answer = {"statusCode": 413, "body": _message(f"body: over {MAX_BODY_BYTES} bytes")}
            return _with_headers({**answer, "multiValueHeaders": {"Content-Type": ["application/json"]}})
        return _with_headers(super().resolve(event, context))  # type: ignore[arg-type]


def _with_headers(answer: dict[str, Any]) -> dict[str, Any]:
    headers: dict[str, list[str]] = answer.setdefault("multiValueHeaders", {})
    present = {name.lower() for name in (*headers, *(answer.get("headers") or {}))}
    for name, value in console_page.API_HEADERS.items():
        if name.lower() not in present:
            headers[name] = [value]
    return answer


def _message(text: str, **extra: Any) -> str:
    return json.dumps({"message": text, **extra})


def _json(status: int, body: Mapping[str, Any]) -> Response[str]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=json.dumps(body))


def _field(location: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(part) for part in location if not isinstance(part, int)) or "body"


def _invalid(error: RequestValidationError) -> Response[str]:
    problems = [{"field": _field(item["loc"]), "message": item["msg"]} for item in error.errors()]
    text = "; ".join(f"{problem['field']}: {problem['message']}" for problem in problems)
    return Response(400, content_types.APPLICATION_JSON, _message(text, errors=problems))


def _refused(error: Refused) -> Response[str]:
    if error.status == 404:
        return Response(404, content_types.APPLICATION_JSON, "")
    return Response(error.status, content_types.APPLICATION_JSON, _message(error.reason))


def approval_view(approval: Approval) -> dict[str, Any]:
    # ``announced`` is the expiry sweep's bookkeeping; ``proposers`` name the pipeline's roles
    return approval.model_dump(mode="json", exclude={"announced", "proposers"})


def review_view(paused: PausedRun) -> dict[str, Any]:
    state, pause = paused.state, paused.pause
    fact = pause.fact
    return {
        "run_id": state.run_id,
        "workflow": state.workflow,
        "definition_version": state.definition_version,
        "version": state.version,
        "paused_by": pause.entry.stage,
        "paused_at": pause.entry.at.isoformat(),
        "limit": fact.limit,
        "reason": fact.reason,
        "spend": fact.spend,
        "budget": pause.entry.summary.get("budget"),
        "resumable": pause.resumable,
        "retriable": pause.retriable,
        "failure": None
        if not pause.retriable
        else {"stage": fact.stage, "error": fact.error, "attempts": fact.attempts},
    }


def build(
    desk: Callable[[], ApprovalDesk],
    reviews: Callable[[], ReviewDesk] | None = None,
    repairs: Callable[[], RepairDesk] | None = None,
) -> APIGatewayRestResolver:
    app = ApprovalsResolver()

    app.exception_handler(RequestValidationError)(_invalid)
    app.exception_handler(Refused)(_refused)

    def who(tenant: str) -> Approver:
        context = app.current_event.request_context
        return caller(context, tenant, program=app.current_event.resource.startswith("/programs/"))

    for prefix in (PEOPLE, PROGRAMS):
        _approval_routes(app, prefix, desk, who)
        if reviews is not None:
            _review_routes(app, prefix, reviews, who)
        if repairs is not None:
            _repair_routes(app, prefix, repairs, who)

    @app.get("/console")
    def console() -> Response[str]:
        sign_in = console_page.SignIn.from_stage(app.current_event.stage_variables)
        return Response(
            status_code=200,
            content_type=content_types.TEXT_HTML,
            body=console_page.page(sign_in),
            headers=console_page.headers(sign_in),
        )

    return app


def _approval_routes(
    app: APIGatewayRestResolver,
    prefix: str,
    desk: Callable[[], ApprovalDesk],
    who: Callable[[str], Approver],
) -> None:
    @app.get(f"{prefix}/approvals")
    def listing(tenant: Tenant) -> Response[str]:
        who(tenant)
        return _json(200, {"approvals": [approval_view(found) for found in desk().pending(tenant)]})

    @app.get(f"{prefix}/approvals/<approval_id>")
    def showing(tenant: Tenant, approval_id: ApprovalId) -> Response[str]:
        who(tenant)
        found = desk().show(tenant, approval_id)
        if found is None:
            raise Refused(404, "")
        return _json(200, approval_view(found))

    def deciding(tenant: str, approval_id: str, body: DecisionBody, *, approve: bool) -> Response[str]:
        approver = who(tenant)
        reason = body.reason.strip()
        if not approve and not reason:
            return _json(400, {"message": "reason: a rejection needs a reason", "field": "reason"})
        result = desk().decide(
            tenant_id=tenant, approval_id=approval_id, approver=approver, approve=approve, reason=reason
        )
        if result.http_status == 404:
            raise Refused(404, "")
        answer: dict[str, Any] = {"answer": result.answer.value, "reason": result.reason}
        if result.http_status == 200 and result.approval is not None:
            answer["approval"] = approval_view(result.approval)
        return _json(result.http_status, answer)

    @app.post(f"{prefix}/approvals/<approval_id>/approve")
    def approving(
        tenant: Tenant, approval_id: ApprovalId, body: Annotated[DecisionBody | None, Body()] = None
    ) -> Response[str]:
        return deciding(tenant, approval_id, body or DecisionBody(), approve=True)

    @app.post(f"{prefix}/approvals/<approval_id>/reject")
    def rejecting(
        tenant: Tenant, approval_id: ApprovalId, body: Annotated[DecisionBody | None, Body()] = None
    ) -> Response[str]:
        return deciding(tenant, approval_id, body or DecisionBody(), approve=False)


def _review_routes(
    app: APIGatewayRestResolver,
    prefix: str,
    reviews: Callable[[], ReviewDesk],
    who: Callable[[str], Approver],
) -> None:
    @app.get(f"{prefix}/reviews")
    def paused(tenant: Tenant) -> Response[str]:
        who(tenant)
        return _json(200, {"reviews": [review_view(found) for found in reviews().paused(tenant)]})

    def answered(result: ReviewResult) -> Response[str]:
        if result.http_status == 404:
            raise Refused(404, "")
        answer: dict[str, Any] = {"answer": result.answer.value, "reason": result.reason}
        if result.ok and result.state is not None:
            state = result.state
            answer["run"] = {"run_id": state.run_id, "status": state.status.value, "version": state.version}
        return _json(result.http_status, answer)

    @app.post(f"{prefix}/reviews/<run_id>/resume")
    def resuming(tenant: Tenant, run_id: RunId, body: Annotated[ResumeBody, Body()]) -> Response[str]:
        reviewer = who(tenant)
        hours = body.deadline_hours
        raised = BudgetOverride(
            max_depth=body.max_depth,
            max_steps=body.max_steps,
            max_tokens=body.max_tokens,
            deadline=None if hours is None else timedelta(hours=hours),
        )
        return answered(
            reviews().resume(
                tenant_id=tenant,
                run_id=run_id,
                reviewer=reviewer,
                budget=raised,
                reason=body.reason.strip(),
                version=body.version,
            )
        )

    @app.post(f"{prefix}/reviews/<run_id>/retry")
    def retrying(tenant: Tenant, run_id: RunId, body: Annotated[CancelBody, Body()]) -> Response[str]:
        reviewer = who(tenant)
        return answered(
            reviews().retry(
                tenant_id=tenant,
                run_id=run_id,
                reviewer=reviewer,
                reason=body.reason.strip(),
                version=body.version,
            )
        )

    @app.post(f"{prefix}/reviews/<run_id>/cancel")
    def cancelling(tenant: Tenant, run_id: RunId, body: Annotated[CancelBody, Body()]) -> Response[str]:
        reviewer = who(tenant)
        return answered(
            reviews().cancel(
                tenant_id=tenant,
                run_id=run_id,
                reviewer=reviewer,
                reason=body.reason.strip(),
                version=body.version,
            )
        )


def _repair_routes(
    app: APIGatewayRestResolver,
    prefix: str,
    repairs: Callable[[], RepairDesk],
    who: Callable[[str], Approver],
) -> None:
    """Parked inputs: the tenant is checked first, and it is the first part of every item's key."""

    def answered(answer: DeskAnswer) -> Response[str]:
        if answer.status == 404:
            raise Refused(404, "")
        body: dict[str, Any] = {"message": answer.reason}
        if answer.field is not None:
            body["field"] = answer.field
        if answer.parked is not None:
            body["repair"] = park_view(answer.parked)
        return _json(answer.status, body)

    @app.get(f"{prefix}/repairs")
    def waiting(tenant: Tenant) -> Response[str]:
        who(tenant)
        return _json(200, {"repairs": [park_view(found) for found in repairs().waiting(tenant)]})

    @app.get(f"{prefix}/repairs/<park_id>")
    def showing(tenant: Tenant, park_id: ParkId) -> Response[str]:
        who(tenant)
        found = repairs().show(tenant, park_id)
        if found is None:
            raise Refused(404, "")
        return _json(200, park_view(found))

    @app.post(f"{prefix}/repairs/<park_id>/resubmit")
    def resubmitting(tenant: Tenant, park_id: ParkId, body: Annotated[ResubmitBody, Body()]) -> Response[str]:
        person = who(tenant)
        return answered(
            repairs().resubmit(tenant, park_id, person=person.id, payload=body.payload, detail=body.detail)
        )

    @app.post(f"{prefix}/repairs/<park_id>/discard")
    def discarding(tenant: Tenant, park_id: ParkId, body: Annotated[DiscardBody, Body()]) -> Response[str]:
        person = who(tenant)
        return answered(repairs().discard(tenant, park_id, person=person.id, reason=body.reason))
