"""The expiry sweep's Lambda entry: a scheduled rule turns lapsed approvals into ApprovalExpired."""

from intentbus.coldstart import importing

with importing():  # see intentbus.coldstart
    from functools import cache
    from typing import Any

    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from intentbus import telemetry
    from intentbus.approval_backlog import report_approval_backlog
    from intentbus.approvals import ApprovalDesk
    from intentbus.runtime import Runtime, approval_desk
    from intentbus.xray import traced, xray_tracer

logger = Logger()
tracer = xray_tracer()  # AWS calls traced under X-Ray; otherwise its SDK is never imported
metrics = Metrics()


@cache
def desk() -> ApprovalDesk:
    return approval_desk(Runtime.from_env())


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    swept = desk().sweep()
    expired = swept.results
    metrics.add_metric(name=telemetry.APPROVALS_EXPIRED, unit=MetricUnit.Count, value=len(expired))
    report_approval_backlog(metrics, swept.pending, swept.at)  # how many, the oldest one's age
    for result in expired:
        logger.info(
            "approval expired",
            extra={
                "approval_id": result.approval.approval_id if result.approval else None,
                "reason": result.reason,
            },
        )
    return {"expired": len(expired)}


lambda_handler = logger.inject_lambda_context(clear_state=True)(traced(metrics.log_metrics(handle), tracer))
