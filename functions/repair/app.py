"""The repair function's Lambda entry (on the quarantine queue when RepairQuarantined is on)."""

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.repair_handler import RepairHandler
from intentbus.repair_worker import RepairWorker
from intentbus.runtime import Runtime, repair_worker

logger = Logger()
tracer = Tracer(patch_modules=("botocore",))  # AWS calls traced; nothing else to patch
metrics = Metrics()


@cache
def worker() -> RepairWorker:
    return repair_worker(Runtime.from_env())


handler = RepairHandler(worker, logger=logger, metrics=metrics)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)  # responses name parked inputs
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return handler.handle_batch(event, context)
