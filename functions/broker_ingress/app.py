"""The broker ingress's Lambda entry (Kafka and Amazon MQ mappings): Powertools decorators and one call."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.broker_ingress import BrokerIngressHandler

logger = Logger()
tracer = Tracer(patch_modules=("botocore",))  # AWS calls traced; nothing else to patch
metrics = Metrics()
ingress = BrokerIngressHandler(logger=logger, tracer=tracer, metrics=metrics)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return ingress.handle(event, context)
