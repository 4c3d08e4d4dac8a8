"""The repair function with its Bedrock client replaced by ``tests.stubbed_bedrock.MODEL``."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.repair_handler import RepairHandler
from intentbus.runtime import Runtime, repair_worker
from tests.stubbed_bedrock import MODEL

logger = Logger()
metrics = Metrics()
handler = RepairHandler(
    lambda: repair_worker(Runtime.from_env(), model_client=lambda: MODEL.client),
    logger=logger,
    metrics=metrics,
)


@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return handler.handle_batch(event, context)
