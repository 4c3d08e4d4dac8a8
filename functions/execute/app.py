"""The execute stage's Lambda entry: Powertools decorators and one call into the core."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.handler import SqsStageHandler
from intentbus.runtime import execute_stage

logger = Logger()
tracer = Tracer(patch_modules=("botocore",))  # AWS calls traced; nothing else to patch
metrics = Metrics()
stage = SqsStageHandler("execute", execute_stage, logger=logger, tracer=tracer, metrics=metrics)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return stage.handle_batch(event, context)
