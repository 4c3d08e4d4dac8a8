"""The repair function's body: Powertools' partial batch processing over ``RepairWorker``.

A record is done (deleted by Lambda) once the worker has resubmitted its repair or parked it; a record
whose handling raised (the table unreachable, two deliveries at once) is reported in
``batchItemFailures`` and retried alone, and after the queue's ``maxReceiveCount`` it moves to the
quarantine queue's DLQ. The worker is built on the first invocation and kept for warm ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.repair_worker import RepairWorker


class RepairHandler:
    def __init__(self, build: Callable[[], RepairWorker], *, logger: Logger, metrics: Metrics) -> None:
        self._build = build
        self._worker: RepairWorker | None = None
        self._logger = logger
        self._metrics = metrics
        self._processor = BatchProcessor(event_type=EventType.SQS)

    def handle_batch(self, event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
        if self._worker is None:
            self._worker = self._build()
        self._worker.bind(getattr(context, "invoked_function_arn", "") or "")
        return process_partial_response(
            event=event, record_handler=self._record, processor=self._processor, context=context
        )

    def _record(self, record: SQSRecord) -> str:
        assert self._worker is not None
        outcome = self._worker.handle(record.message_id, record.body)
        self._logger.info(
            "quarantine message handled", extra={"message_id": record.message_id, "outcome": outcome}
        )
        self._metrics.add_metric(name=f"repair_{outcome}", unit=MetricUnit.Count, value=1)
        return outcome
