"""The repair function's work on one quarantine message: ask the model once, resubmit, or park it.

Order, so nothing is lost and nothing is asked twice:

1. The message's item (tenant, SQS message id) is read. If it exists, this is a redelivery: what it
   says stands (an item left ``asking`` is parked as interrupted), and the message is done.
2. What the model may not repair is parked at once: another stage's quarantine, a body cut to fit the
   queue, a repaired input refused again, an input whose producer is not bound to its tenant.
3. One repair is taken from the tenant's budget for the hour (a conditional counter); none left: parked.
4. The item is written ``asking``, then the model is asked once, with the payload model's JSON schema
   and validate's reason. Its answer is validated as validate will; a valid one is put on the ingress
   bus as the original's source (validate checks it, and its producer's binding, like any input), with
   ``causation_id`` = the quarantined event's id. Whatever else happens is parked with the reason.
5. Only then does the handler report success, and Lambda deletes the message.

A failure of the table itself raises: the message is retried, and after ``maxReceiveCount`` it moves
to the quarantine queue's DLQ.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import ClassVar

from intentbus.envelope import TENANT_PATTERN
from intentbus.errors import IntentbusError, PublishError
from intentbus.ids import derive_id
from intentbus.parked import UNBOUND_TENANT, Parked, ParkKind, ParkStatus, ParkStore
from intentbus.producers import ProducerBindings
from intentbus.registry import TypeRegistry
from intentbus.repair import InputRepairer, Quarantined, RepairFailed, Submit, repair_quarantined

logger = logging.getLogger(__name__)

MAX_PROPOSAL_BYTES = 64 * 1024


@dataclass
class RepairWorker:
    """Handles one quarantine message: asks the model to repair it once, resubmits it, or parks it."""

    types: TypeRegistry
    producers: ProducerBindings
    store: ParkStore
    repairer: InputRepairer | None
    """``None`` when no model is configured: everything waits for a person."""
    submit: Submit
    now: Callable[[], datetime]
    budget_per_hour: int
    own_account: str | None = None
    """The stack's account, from the Lambda context: bindings without an account name it."""

    def bind(self, invoked_function_arn: str) -> None:
        parts = invoked_function_arn.split(":")
        if len(parts) > 4 and parts[4]:
            self.own_account = parts[4]

    def handle(self, message_id: str, body: str) -> str:
        """Handles one quarantine message; returns what became of it (a ``ParkStatus`` or ``ParkKind``)."""
        try:
            record = Quarantined.from_message(body)
        except (ValueError, KeyError, TypeError):
            return self._park_new(_unreadable(message_id, body, self.now()), ParkKind.NOT_REPAIRABLE)
        tenant = self._tenant(record)
        existing = self.store.get(tenant, message_id)
        if existing is not None:
            return self._redelivered(existing)
        parked = Parked(
            tenant_id=tenant,
            park_id=message_id,
            status=ParkStatus.ASKING,
            stage=record.stage,
            quarantine_reason=record.reason,
            body=record.body,
            at=self.now(),
            field=record.field,
            type_name=_text((record.bus_event or {}).get("detail-type")),
            source=_text((record.bus_event or {}).get("source")),
        )
        why_not = self._why_not_repairable(record, tenant)
        if why_not is not None:
            kind, reason = why_not
            return self._park_new(replace(parked, reason=reason), kind)
        if not self.store.take_repair(
            tenant, self.now().strftime("%Y-%m-%dT%H:00:00+00:00"), self.budget_per_hour
        ):
            reason = f"the tenant's repair budget ({self.budget_per_hour} an hour) is spent"
            return self._park_new(replace(parked, reason=reason), ParkKind.BUDGET_EXHAUSTED)
        if not self.store.create(parked):
            # Another delivery of this message claimed it meanwhile: retry later, and read what it did.
            raise ConcurrentDelivery(f"quarantine message {message_id} is being repaired by another delivery")
        return self._ask(record, parked)

    def _ask(self, record: Quarantined, asking: Parked) -> str:
        assert self.repairer is not None
        try:
            done = repair_quarantined(
                record, self.repairer, types=self.types, submit=self.submit, now=self.now, attempts=1
            )
        except RepairFailed as failed:
            last = failed.attempts[-1]
            invalid = last.get("refused_by") == "validation"
            proposal = last.get("raw") if invalid else None
            kind = ParkKind.STILL_INVALID if invalid else ParkKind.MODEL_GARBAGE
            return self._settle(
                replace(
                    asking,
                    reason=str(last.get("reason")),
                    field=last.get("field"),
                    proposal=_bounded(proposal),
                ),
                kind,
            )
        except IntentbusError as error:
            kind = ParkKind.RESUBMIT_FAILED if isinstance(error, PublishError) else ParkKind.MODEL_ERROR
            return self._settle(replace(asking, reason=f"{error.code}: {error}"), kind)
        except Exception as error:  # the model call's own failures (botocore), after its retries
            return self._settle(
                replace(asking, reason=f"the model call failed: {type(error).__name__}"), ParkKind.MODEL_ERROR
            )
        resubmitted = replace(
            asking, status=ParkStatus.RESUBMITTED, resubmitted_id=done.envelope.id, decided_by="model"
        )
        if not self.store.settle(resubmitted, expected=ParkStatus.ASKING):
            logger.warning("the repair of %s was resubmitted, but its item had moved on", asking.park_id)
        return ParkStatus.RESUBMITTED.value

    def _redelivered(self, existing: Parked) -> str:
        if existing.status is not ParkStatus.ASKING:
            return existing.status.value
        interrupted = replace(
            existing, reason="the repair was interrupted before it finished; the model is not asked again"
        )
        return self._settle(interrupted, ParkKind.INTERRUPTED)

    def _why_not_repairable(self, record: Quarantined, tenant: str) -> tuple[ParkKind, str] | None:
        if record.stage != "validate":
            return (
                ParkKind.NOT_REPAIRABLE,
                f"quarantined by {record.stage}, not a producer input validate refused",
            )
        if record.body_truncated:
            return ParkKind.NOT_REPAIRABLE, "the body was cut to fit the quarantine queue"
        if tenant == UNBOUND_TENANT:
            return ParkKind.NOT_REPAIRABLE, "its tenant is missing or not bound to its producer"
        detail = record.detail or {}
        causation = detail.get("causation_id")
        if isinstance(causation, str) and detail.get("id") == derive_id(causation, "repair"):
            return ParkKind.REFUSED_AGAIN, f"a repaired input, refused again: {record.reason}"
        if self.repairer is None:
            return ParkKind.MODEL_ERROR, "no model is configured for repairs (BedrockModelId)"
        return None

    def _tenant(self, record: Quarantined) -> str:
        """The claimed tenant, when the original's producer is bound to it; else the operators' partition."""
        event = record.bus_event or {}
        detail = record.detail or {}
        tenant = detail.get("tenant_id", detail.get("tenantid"))
        account, source = event.get("account"), event.get("source")
        if not (isinstance(tenant, str) and isinstance(account, str) and isinstance(source, str)):
            return UNBOUND_TENANT
        if not re.match(TENANT_PATTERN, tenant):
            return UNBOUND_TENANT
        bound = self.producers.allows(
            account=account, source=source, tenant_id=tenant, own_account=self.own_account
        )
        return tenant if bound else UNBOUND_TENANT

    def _park_new(self, parked: Parked, kind: ParkKind) -> str:
        waiting = replace(parked, status=ParkStatus.PARKED, kind=kind)
        if not self.store.create(waiting):
            return self._redelivered(self.store.get(parked.tenant_id, parked.park_id) or waiting)
        logger.info("parked quarantine message %s: %s", parked.park_id, kind.value)
        return kind.value

    def _settle(self, parked: Parked, kind: ParkKind) -> str:
        waiting = replace(parked, status=ParkStatus.PARKED, kind=kind)
        if not self.store.settle(waiting, expected=ParkStatus.ASKING):
            logger.warning("quarantine message %s had moved on before it could be parked", parked.park_id)
        else:
            logger.info("parked quarantine message %s: %s", parked.park_id, kind.value)
        return kind.value


class ConcurrentDelivery(IntentbusError):
    """Two deliveries of one message at once: this one fails, so its retry reads what the other did."""

    code: ClassVar[str] = "concurrent_delivery"


def _unreadable(message_id: str, body: str, now: datetime) -> Parked:
    return Parked(
        tenant_id=UNBOUND_TENANT,
        park_id=message_id,
        status=ParkStatus.PARKED,
        stage="unknown",
        quarantine_reason="",
        body=body,
        at=now,
        reason="not a quarantine record",
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _bounded(proposal: object) -> str | None:
    if proposal is None:
        return None
    text = json.dumps(proposal, ensure_ascii=False, default=str)
    return text if len(text.encode()) <= MAX_PROPOSAL_BYTES else None
