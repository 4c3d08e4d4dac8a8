"""The baseline every stage is measured against: the least a Powertools SQS handler does per record.

Powertools' Logger, Tracer (patching botocore, as the stages do) and Metrics, its BatchProcessor with
partial batch responses, and per record one PutItem and one PutEvents through boto3 clients made at
import, the way the Powertools documentation writes it.
"""

import json
import os
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

logger = Logger()
tracer = Tracer(patch_modules=("botocore",))
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS)
dynamodb = boto3.client("dynamodb")
events = boto3.client("events")
TABLE = os.environ["WORKFLOW_TABLE"]
BUS = os.environ["EVENT_BUS_NAME"]


def record_handler(record: SQSRecord) -> None:
    event = json.loads(record.body)
    detail = event.get("detail", {})
    dynamodb.put_item(
        TableName=TABLE,
        Item={"pk": {"S": str(detail.get("run_id"))}, "sk": {"S": record.message_id}},
    )
    events.put_events(
        Entries=[
            {
                "Source": "bench.baseline",
                "DetailType": str(event.get("detail-type")),
                "Detail": json.dumps(detail),
                "EventBusName": BUS,
            }
        ]
    )
    metrics.add_metric(name="processed", unit=MetricUnit.Count, value=1)
    logger.info("record processed", extra={"message_id": record.message_id})


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> Any:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
