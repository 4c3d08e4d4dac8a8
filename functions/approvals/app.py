"""The approvals API's Lambda entry: Powertools Event Handler over the approval, review and repair desks."""

from intentbus.coldstart import importing

with importing():  # see intentbus.coldstart
    from functools import cache
    from typing import Any

    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.logging import correlation_paths
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from intentbus.approvals import ApprovalDesk
    from intentbus.approvals_api import build
    from intentbus.repair_desk import RepairDesk
    from intentbus.review import ReviewDesk
    from intentbus.runtime import Runtime, approval_desk, repair_desk, review_desk
    from intentbus.xray import traced, xray_tracer

logger = Logger()
tracer = xray_tracer()  # AWS calls traced under X-Ray; otherwise its SDK is never imported


@cache
def runtime() -> Runtime:
    return Runtime.from_env()


def desk() -> ApprovalDesk:
    return approval_desk(runtime())


def reviews() -> ReviewDesk:
    return review_desk(runtime())


def repairs() -> RepairDesk:
    return repair_desk(runtime())


app = build(desk, reviews, repairs)


def resolve(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


lambda_handler = logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)(traced(resolve, tracer, capture_response=False))  # responses hold approvals' evidence
