"""The body every stage's Lambda handler shares: Powertools' partial batch processing over the core.

A record that raises is reported in ``batchItemFailures`` and retried alone by SQS; malformed
records never raise, they are quarantined by the core. The core is built on the first invocation
and kept for warm ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.runtime import Runtime
from intentbus.stages.common import StageCore


class SqsStageHandler:
    def __init__(
        self,
        stage: str,
        build: Callable[[Runtime], StageCore],
        *,
        logger: Logger,
        tracer: Tracer,
        metrics: Metrics,
        runtime: Callable[[], Runtime] = Runtime.from_env,
    ) -> None:
        self.stage = stage
        self._build = build
        self._runtime = runtime
        self._core: StageCore | None = None
        self._logger = logger
        self._tracer = tracer
        self._metrics = metrics
        self._processor = BatchProcessor(event_type=EventType.SQS)

    @property
    def core(self) -> StageCore:
        if self._core is None:
            self._core = self._build(self._runtime())
        return self._core

    def handle_batch(self, event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
        self.core.bind(context)
        return process_partial_response(
            event=event, record_handler=self._handle_record, processor=self._processor, context=context
        )

    def _handle_record(self, record: SQSRecord) -> str:
        with self._tracer.provider.in_subsegment(name=f"## {self.stage} record") as subsegment:
            try:
                result = self.core.handle(record.body, record.message_id)
            except Exception:
                self._logger.exception(
                    "record failed; SQS will retry it", extra={"message_id": record.message_id}
                )
                self._metrics.add_metric(name="failed", unit=MetricUnit.Count, value=1)
                raise
            envelope = result.envelope
            ids: dict[str, Any] = {
                "stage": self.stage,
                "outcome": result.outcome.value,
                "message_id": record.message_id,
            }
            if envelope is not None:
                ids |= {
                    "tenant_id": envelope.tenant_id,
                    "run_id": envelope.run_id,
                    "event_id": envelope.id,
                    "event_type": envelope.type,
                    "trace_id": envelope.trace_id,
                }
            for key in ("stage", "outcome", "tenant_id", "run_id", "event_type"):
                if key in ids:
                    subsegment.put_annotation(key, ids[key])
            self._logger.info(
                "record processed",
                extra={**ids, "reason": result.reason, "published": [out.type for out in result.published]},
            )
            self._metrics.add_metric(name=result.outcome.value, unit=MetricUnit.Count, value=1)
            return result.outcome.value
