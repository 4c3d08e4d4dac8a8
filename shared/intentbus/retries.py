"""What a stage knows of the delivery it handles, and how it asks SQS to bring a message back later.

``Delivery`` comes from the SQS record (``ApproximateReceiveCount``) and the queue's ``maxReceiveCount``
(``INTENTBUS_MAX_RECEIVE_COUNT``, set from the template): on the last receive, a failure would send the
message to the DLQ, so the stage handler pauses the run for review instead (``intentbus.failure_review``).
``RetryLater`` is how a core asks for the message again after a wait: the handler sets the message's
visibility to that wait (``VisibilityPort``) and reports the record as a batch item failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from intentbus.errors import IntentbusError
from intentbus.frozen import Frozen, fields_repr, frozen_dataclass

if TYPE_CHECKING:
    from intentbus.stages.common import StageResult


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class Delivery(Frozen):
    """Which delivery of an SQS message this is, and whether it is the last before its DLQ."""

    receive_count: int = 1
    """SQS's ``ApproximateReceiveCount``: 1 on the first delivery."""
    max_receive_count: int | None = None
    """The queue's ``maxReceiveCount``; ``None`` when unknown (no DLQ is assumed)."""

    def __init__(self, receive_count: int = 1, max_receive_count: int | None = None) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["receive_count"] = receive_count
        fields["max_receive_count"] = max_receive_count

    __repr__ = fields_repr

    @property
    def last(self) -> bool:
        """Whether failing this delivery would send the message to the DLQ."""
        return self.max_receive_count is not None and self.receive_count >= self.max_receive_count

    @classmethod
    def of(cls, record: dict[str, Any], max_receive_count: int | None) -> Delivery:
        attributes = record.get("attributes")
        raw = attributes.get("ApproximateReceiveCount") if isinstance(attributes, dict) else None
        try:
            count = max(1, int(raw)) if raw is not None else 1
        except (TypeError, ValueError):
            count = 1
        return cls(receive_count=count, max_receive_count=max_receive_count)


class RetryLater(IntentbusError):
    """The message should be delivered again in ``delay_seconds`` (attempt ``attempt`` of ``max_attempts``
    failed with ``error``)."""

    code: ClassVar[str] = "retry_later"

    def __init__(self, error: BaseException, *, delay_seconds: int, attempt: int, max_attempts: int) -> None:
        super().__init__(f"attempt {attempt} of {max_attempts} failed ({error}); again in {delay_seconds} s")
        self.error = error
        self.delay_seconds = delay_seconds
        self.attempt = attempt
        self.max_attempts = max_attempts


class VisibilityPort(Protocol):
    def delay(self, queue_arn: str, receipt_handle: str, seconds: int) -> None:
        """Make the received message visible again ``seconds`` from now (ChangeMessageVisibility)."""
        ...


@runtime_checkable
class HandlesDeliveries(Protocol):
    """A stage core that needs to know which delivery of its message it handles (execute counts attempts)."""

    def handle_delivery(self, body: str, message_id: str | None, delivery: Delivery) -> StageResult: ...
