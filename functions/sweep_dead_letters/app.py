"""The dead-letter sweep's Lambda entry: a scheduled rule pauses the runs whose messages reached a DLQ."""

from intentbus.coldstart import importing

with importing():  # see intentbus.coldstart
    import os
    from functools import cache
    from typing import Any

    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from intentbus.adapters.sqs_dead_letters import SqsDeadLetters
    from intentbus.dead_letters import DeadLetterSweep, parse_queues
    from intentbus.runtime import Runtime
    from intentbus.xray import traced, xray_tracer

logger = Logger()
tracer = xray_tracer()  # AWS calls traced under X-Ray; otherwise its SDK is never imported
metrics = Metrics()


@cache
def sweep() -> DeadLetterSweep:
    runtime = Runtime.from_env()
    letters = SqsDeadLetters(runtime.clients.client("sqs"))
    return DeadLetterSweep(
        runtime.deps, runtime.store, letters, parse_queues(os.environ.get("DEAD_LETTER_QUEUES", ""))
    )


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    swept = sweep().sweep()
    paused = [item for item in swept if item.paused_run is not None]
    metrics.add_metric(name="DeadLettersSeen", unit=MetricUnit.Count, value=len(swept))
    metrics.add_metric(name="RunsPausedFromDeadLetters", unit=MetricUnit.Count, value=len(paused))
    for item in paused:
        logger.warning(
            "dead-lettered message paused its run for review",
            extra={"stage": item.stage, "message_id": item.message_id, "run_id": item.paused_run},
        )
    return {"seen": len(swept), "paused": len(paused)}


lambda_handler = logger.inject_lambda_context(clear_state=True)(traced(metrics.log_metrics(handle), tracer))
