"""SQS as the port of intentbus_cli.queue_moves: receive, send, delete, release; SQS's own move task."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from intentbus_cli.queue_moves import MoveTaskUnsupported, Outgoing, QueuedMessage, TaskStatus

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

_UNSUPPORTED_CODES = frozenset(
    {"UnsupportedOperation", "InvalidAction", "NotImplemented", "InternalFailure", "InternalError"}
)


@dataclass(frozen=True)
class Depth:
    visible: int
    in_flight: int
    delayed: int


def sendable_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Message attributes as received, in the shape SendMessage takes (no empty list fields)."""
    sendable: dict[str, Any] = {}
    for name, value in attributes.items():
        attribute: dict[str, Any] = {"DataType": value["DataType"]}
        for key in ("StringValue", "BinaryValue"):
            if key in value:
                attribute[key] = value[key]
        sendable[name] = attribute
    return sendable


class SqsQueues:
    """``wait_seconds`` is ReceiveMessage's long poll: on AWS a short poll (0) may answer nothing from a
    queue that has messages, so one empty long poll is what ends a pass. ``task_client`` makes the
    StartMessageMoveTask calls (e.g. one without retries, to find out quickly that it is missing)."""

    def __init__(
        self, client: SQSClient, *, wait_seconds: int = 1, task_client: SQSClient | None = None
    ) -> None:
        self._client = client
        self._wait = wait_seconds
        self._task_client = task_client or client

    # ------------------------------------------------------------------ QueuePort

    def receive(self, queue_url: str, *, max_messages: int, visibility_timeout: int) -> list[QueuedMessage]:
        response = self._client.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=max(1, min(max_messages, 10)),
            VisibilityTimeout=visibility_timeout,
            WaitTimeSeconds=self._wait,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return [
            QueuedMessage(
                message_id=message["MessageId"],
                receipt_handle=message["ReceiptHandle"],
                body=message["Body"],
                attributes={str(k): str(v) for k, v in message.get("Attributes", {}).items()},
                message_attributes=dict(message.get("MessageAttributes", {})),
            )
            for message in response.get("Messages", [])
        ]

    def send_batch(self, queue_url: str, entries: Sequence[tuple[str, Outgoing]]) -> set[str]:
        batch: list[Any] = []
        for entry_id, outgoing in entries:
            entry: dict[str, Any] = {"Id": entry_id, "MessageBody": outgoing.body}
            if outgoing.message_attributes:
                entry["MessageAttributes"] = sendable_attributes(outgoing.message_attributes)
            batch.append(entry)
        response = self._client.send_message_batch(QueueUrl=queue_url, Entries=batch)
        return {failed["Id"] for failed in response.get("Failed", [])}

    def delete_batch(self, queue_url: str, entries: Sequence[tuple[str, str]]) -> set[str]:
        response = self._client.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": entry_id, "ReceiptHandle": handle} for entry_id, handle in entries],
        )
        return {failed["Id"] for failed in response.get("Failed", [])}

    def release(self, queue_url: str, receipt_handles: Sequence[str]) -> None:
        if receipt_handles:
            self._client.change_message_visibility_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(n), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                    for n, handle in enumerate(receipt_handles)
                ],
            )

    # ------------------------------------------------------------------ MoveTaskPort

    def start_move_task(self, source_arn: str, destination_arn: str | None) -> str:
        kwargs: dict[str, Any] = {"SourceArn": source_arn}
        if destination_arn:
            kwargs["DestinationArn"] = destination_arn
        try:
            return str(self._task_client.start_message_move_task(**kwargs)["TaskHandle"])
        except ClientError as error:
            if _unsupported(error):
                code = error.response.get("Error", {}).get("Code", "?")
                raise MoveTaskUnsupported(
                    f"StartMessageMoveTask is not available here (error {code})"
                ) from error
            raise

    def move_task_status(self, source_arn: str, task_handle: str) -> TaskStatus:
        tasks = self._task_client.list_message_move_tasks(SourceArn=source_arn, MaxResults=10).get(
            "Results", []
        )
        task = next((t for t in tasks if t.get("TaskHandle") == task_handle), tasks[0] if tasks else None)
        if task is None:
            return TaskStatus(status="RUNNING", moved=0, to_move=None)
        to_move = task.get("ApproximateNumberOfMessagesToMove")
        return TaskStatus(
            status=str(task.get("Status", "RUNNING")),
            moved=int(task.get("ApproximateNumberOfMessagesMoved", 0)),
            to_move=None if to_move is None else int(to_move),
            failure_reason=task.get("FailureReason"),
        )

    # ------------------------------------------------------------------ looking at queues

    def queue_arn(self, queue_url: str) -> str:
        attributes = self._client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
        return str(attributes["Attributes"]["QueueArn"])

    def depth(self, queue_url: str) -> Depth:
        attributes = self._client.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return Depth(
            visible=int(attributes.get("ApproximateNumberOfMessages", "0")),
            in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
            delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", "0")),
        )

    def dead_letter_sources(self, dlq_url: str) -> list[str]:
        """The queues whose RedrivePolicy names this DLQ."""
        found: list[str] = []
        paginator = self._client.get_paginator("list_dead_letter_source_queues")
        for page in paginator.paginate(QueueUrl=dlq_url):
            found.extend(page.get("queueUrls", []))
        return found


def _unsupported(error: ClientError) -> bool:
    code = str(error.response.get("Error", {}).get("Code", ""))
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code in _UNSUPPORTED_CODES or status in (500, 501) or code in ("500", "501")
