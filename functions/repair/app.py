"""The repair function's Lambda entry (on the quarantine queue when RepairQuarantined is on)."""

from intentbus.coldstart import importing

with importing():  # see intentbus.coldstart
    from functools import cache
    from typing import Any

    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from intentbus.repair_handler import RepairHandler
    from intentbus.repair_worker import RepairWorker
    from intentbus.runtime import Runtime, repair_worker
    from intentbus.xray import traced, xray_tracer

logger = Logger()
tracer = xray_tracer()  # AWS calls traced under X-Ray; otherwise its SDK is never imported
metrics = Metrics()


@cache
def worker() -> RepairWorker:
    return repair_worker(Runtime.from_env())


handler = RepairHandler(worker, logger=logger, metrics=metrics)


def handle(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return handler.handle_batch(event, context)


lambda_handler = logger.inject_lambda_context(clear_state=True)(
    traced(metrics.log_metrics(handle), tracer, capture_response=False)  # responses name parked inputs
)
