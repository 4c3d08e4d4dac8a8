"""The local cloud's own SQS receives answered by moto's SQS backend in process, as its handler answers.

Lambda's event-source mapping receives a stage queue's messages itself: no function's code makes that
call, and the poller makes it hundreds of times a fault schedule (about one call in seven); the cloud's
look into a dead-letter or quarantine queue (``LocalCloud.queue_messages``) receives too. On the direct
path (intentbus_local.direct_calls) each one still went through botocore's serializer, moto's request
parser, moto's handler and response serializer, and botocore's parser. In process they ask moto's
backend (``SQSBackend.receive_message``, the call moto's handler makes, with the arguments it passes for
those requests: up to 10 messages, no wait, the visibility timeout asked or else the queue's, every
message attribute) and build each message as moto's handler does (``SQSResponse.receive_message``,
every system attribute asked for).

What botocore's parser made of that: the same message dicts. Every value of a message without message
attributes is a text, which moto's serializer writes as it is (``str``), JSON carries unchanged and
botocore's parser reads back as the same text, with the message's keys in the output shape's order
(``MessageId``, ``ReceiptHandle``, ``MD5OfBody``, ``Body``, ``Attributes``) and the attributes in the
handler's order. A message with message attributes (their binary values are base64 on the wire), or a
value that is not a text, is not answered so: the whole answer then goes through moto's serializer and
botocore's parser, as on the direct path. Compared with the request's answer in
tests/integration/test_sqs_receive.py. Pinned to moto's handler (``PINS``).
"""

from __future__ import annotations

from typing import Any

from botocore.model import OperationModel

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={"moto.sqs.responses.SQSResponse.receive_message": "0027050ecd1294f8"},
)
"""The handler whose answer this builds (its digest is checked by tests/integration/test_sqs_receive.py)."""
MAX_MESSAGES = 10
MAXIMUM_VISIBILITY_TIMEOUT = 43200
"""moto's (and SQS's) limit, in seconds: a longer one is refused by the handler."""
_SYSTEM_ATTRIBUTES = (
    "AWSTraceHeader",
    "ApproximateFirstReceiveTimestamp",
    "ApproximateReceiveCount",
    "MessageDeduplicationId",
    "MessageGroupId",
    "SenderId",
    "SentTimestamp",
    "SequenceNumber",
)
"""``SUPPORTED_SYSTEM_MESSAGE_ATTRIBUTE_NAMES`` of moto's handler: with "All", each of them."""


def receive(
    backend: Any, queue_name: str, count: int, model: OperationModel, visibility_timeout: int | None = None
) -> list[dict[str, Any]] | None:
    """Up to ``count`` (1 to 10) messages of the queue, as ReceiveMessage's parsed ``Messages``, each
    left invisible for ``visibility_timeout`` seconds (None: the queue's); None (nothing received) where
    the request must be made instead: moto's code moved, no such queue, a timeout moto refuses."""
    if not PINS.holds() or not 1 <= count <= MAX_MESSAGES or queue_name not in backend.queues:
        return None
    if visibility_timeout is not None and not 0 <= visibility_timeout <= MAXIMUM_VISIBILITY_TIMEOUT:
        return None
    queue = backend.get_queue(queue_name)
    timeout = queue.visibility_timeout if visibility_timeout is None else visibility_timeout
    received = backend.receive_message(queue_name, count, 0, timeout, ["All"])
    messages = [_message(message) for message in received]
    if all(_plain(message) for message in messages):
        return messages
    return _parsed_by_botocore({"Messages": messages} if messages else {}, model)


def _message(message: Any) -> dict[str, Any]:
    """One message as moto's handler puts it in its result."""
    built: dict[str, Any] = {
        "MessageId": message.id,
        "ReceiptHandle": message.receipt_handle,
        "MD5OfBody": message.body_md5,
        "Body": message.body,
    }
    if len(message.message_attributes):
        built["MessageAttributes"] = message.message_attributes
        built["MD5OfMessageAttributes"] = message.attribute_md5
    attributes: dict[str, Any] = {
        "SenderId": message.sender_id,
        "SentTimestamp": str(message.sent_timestamp),
        "ApproximateReceiveCount": str(message.approximate_receive_count),
        "ApproximateFirstReceiveTimestamp": str(message.approximate_first_receive_timestamp),
    }
    if message.deduplication_id is not None:
        attributes["MessageDeduplicationId"] = message.deduplication_id
    if message.group_id is not None:
        attributes["MessageGroupId"] = message.group_id
    if message.system_attributes and message.system_attributes.get("AWSTraceHeader"):
        attributes["AWSTraceHeader"] = message.system_attributes["AWSTraceHeader"].get("StringValue")
    if message.sequence_number is not None:
        attributes["SequenceNumber"] = message.sequence_number
    built["Attributes"] = attributes
    return built


def _plain(message: dict[str, Any]) -> bool:
    """Whether botocore's parser would hand back this very dict: texts only, no message attributes."""
    if "MessageAttributes" in message:
        return False
    attributes = message["Attributes"]
    texts = [message[key] for key in ("MessageId", "ReceiptHandle", "MD5OfBody", "Body")]
    return all(type(value) is str for value in [*texts, *attributes.values()])


def _parsed_by_botocore(result: dict[str, Any], model: OperationModel) -> list[dict[str, Any]]:
    """The result through moto's serializer and botocore's parser, as the direct path answers it."""
    from moto.core.responses import ActionContext, ActionResult
    from moto.core.serialize import get_serializer_class
    from moto.core.utils import get_service_model
    from moto.sqs.responses import SQSResponse

    from intentbus_local import direct_calls

    service_model = get_service_model("sqs")
    context = ActionContext(
        service_model,
        service_model.operation_model("ReceiveMessage"),
        get_serializer_class("sqs", "json"),
        SQSResponse(),
    )
    status, headers, body = ActionResult(result).execute_result(context)
    parsed = direct_calls.parsed_answer(model, "https://sqs.us-east-1.amazonaws.com/", status, headers, body)
    return list(parsed.get("Messages", []))
