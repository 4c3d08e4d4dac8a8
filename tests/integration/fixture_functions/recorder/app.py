"""A stand-in stage for the local cloud's own tests: journals every record, misbehaves on request.

A record's behaviour is ``detail.behaviour`` of its EventBridge body: "ok" (default), "fail" (the record
handler raises, so it is reported in batchItemFailures), "crash" (the handler raises: the whole batch
fails), "crash-first" (raises on a first delivery only), "quarantine" (sends the body to the quarantine
queue with the handler's own boto3), "bogus-report" (names a message that is not in the batch).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()  # binds its stream now, at import: the local cloud must already redirect stdout
processor = BatchProcessor(event_type=EventType.SQS)
PROBED_ENV = (
    "WORKFLOW_TABLE",
    "EVENT_BUS_NAME",
    "QUARANTINE_QUEUE_URL",
    "POWERTOOLS_SERVICE_NAME",
    "CRM_TABLE",
    "INTENTBUS_WORKFLOWS",
)
SANDBOX = str(uuid.uuid4())
"""Drawn at import: a new value means a cold start."""


def _behaviour(record: Mapping[str, Any]) -> str:
    body = json.loads(record["body"])
    detail = body.get("detail", {}) if isinstance(body, dict) else {}
    return str(detail.get("behaviour", "ok"))


def _journal(entry: dict[str, Any]) -> None:
    with open(os.environ["FIXTURE_JOURNAL"], "a", encoding="utf-8") as journal:
        journal.write(json.dumps(entry) + "\n")


def record_handler(record: SQSRecord) -> None:
    event = EventBridgeModel.model_validate_json(record.body)  # requires `account`, as on AWS
    behaviour = _behaviour(record.raw_event)
    _journal(
        {
            "function": os.environ["AWS_LAMBDA_FUNCTION_NAME"],
            "message_id": record.message_id,
            "receive_count": int(record.attributes.approximate_receive_count),
            "behaviour": behaviour,
            "account": event.account,
            "detail_type": event.detail_type,
            "env": {name: os.environ.get(name) for name in PROBED_ENV},
            "sandbox": SANDBOX,
        }
    )
    logger.info("record", behaviour=behaviour, message_id=record.message_id)
    if behaviour == "fail":
        raise ValueError(f"poison record {record.message_id}")
    if behaviour == "quarantine":
        import boto3

        boto3.client("sqs").send_message(QueueUrl=os.environ["QUARANTINE_QUEUE_URL"], MessageBody=record.body)


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    records = event["Records"]
    behaviours = [_behaviour(r) for r in records]
    if "crash" in behaviours:
        raise RuntimeError("crash")
    first = any(r["attributes"]["ApproximateReceiveCount"] == "1" for r in records)
    if "crash-first" in behaviours and first:
        raise RuntimeError("crash on first delivery")
    if "bogus-report" in behaviours:
        return {"batchItemFailures": [{"itemIdentifier": "not-a-message-of-this-batch"}]}
    if context.get_remaining_time_in_millis() <= 0:
        raise RuntimeError("no time left")
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
