"""The broker ingress's Lambda entry (Kafka and Amazon MQ mappings): Powertools decorators and one call."""

from intentbus.coldstart import importing

with importing():  # see intentbus.coldstart
    from typing import Any

    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from intentbus.broker_ingress import BrokerIngressHandler
    from intentbus.xray import traced, xray_tracer

logger = Logger()
tracer = xray_tracer()  # AWS calls traced under X-Ray; otherwise its SDK is never imported
metrics = Metrics()
ingress = BrokerIngressHandler(logger=logger, tracer=tracer, metrics=metrics)


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return ingress.handle(event, context)


lambda_handler = logger.inject_lambda_context(clear_state=True)(traced(metrics.log_metrics(handle), tracer))
