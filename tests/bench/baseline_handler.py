"""The cold-start baseline: a handler that imports only boto3 and Powertools' Logger, Tracer and Metrics."""

from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"session": boto3.session.Session().region_name}
