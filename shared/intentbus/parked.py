"""A quarantined message the repair function handled: what it did, or why it waits for a person.

The repair function keeps one item per quarantine message, keyed by the tenant and the message's SQS id
(stable across redeliveries). The item is written before the message is deleted, and before the model is
asked (status ``asking``), so a redelivered message is never asked about twice: its item says what
happened, and one left ``asking`` (the function died mid-way) is parked as interrupted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

UNBOUND_TENANT = "~unbound"
"""Where a message goes whose tenant is unknown or not bound to its producer: operators only. No
tenant id can be this (``TENANT_PATTERN`` starts with a letter or digit), so no tenant's person sees it."""


class ParkStatus(StrEnum):
    ASKING = "asking"
    """The model is being asked; written before the call, so a redelivery does not ask again."""
    RESUBMITTED = "resubmitted"
    """A repaired input went back through the ingress (by the model's repair, or a person's)."""
    PARKED = "parked"
    """Waiting for a person: edit and resubmit, or discard with a reason."""
    DISCARDED = "discarded"


class ParkKind(StrEnum):
    """Why a message waits for a person."""

    MODEL_GARBAGE = "model_garbage"
    """The model's answer held no repaired input."""
    STILL_INVALID = "still_invalid"
    """The model's repaired input failed validation again."""
    BUDGET_EXHAUSTED = "budget_exhausted"
    MODEL_ERROR = "model_error"
    """Calling the model failed (after its retries), or no model is configured."""
    RESUBMIT_FAILED = "resubmit_failed"
    REFUSED_AGAIN = "refused_again"
    """A repaired input (the model's or a person's) that validate quarantined again: not asked twice."""
    NOT_REPAIRABLE = "not_repairable"
    """Not a producer input validate refused (another stage's), cut to fit the queue, or unbound."""
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Parked:
    """A quarantined input waiting for a person (or being repaired), as its item records it."""

    tenant_id: str
    park_id: str
    """The quarantine message's SQS id."""
    status: ParkStatus
    stage: str
    quarantine_reason: str
    body: str
    """The quarantined body (the EventBridge event as validate got it)."""
    at: datetime
    kind: ParkKind | None = None
    reason: str = ""
    """Why it waits for a person (empty while asking, or once resubmitted)."""
    field: str | None = None
    type_name: str | None = None
    source: str | None = None
    proposal: str | None = None
    """The model's still-invalid repaired detail (JSON), for a person to start from."""
    resubmitted_id: str | None = None
    decided_by: str | None = None
    decided_reason: str | None = None
    decided_at: datetime | None = None


class ParkStore(Protocol):
    def get(self, tenant_id: str, park_id: str) -> Parked | None: ...

    def create(self, parked: Parked) -> bool:
        """Writes the item if no item has this key; ``False`` if one has."""
        ...

    def settle(self, parked: Parked, *, expected: ParkStatus) -> bool:
        """Replaces the item if its status is still ``expected``; ``False`` if it is not."""
        ...

    def waiting(self, tenant_id: str) -> list[Parked]:
        """The tenant's parked items, oldest first."""
        ...

    def take_repair(self, tenant_id: str, hour: str, limit: int) -> bool:
        """Counts one repair against the tenant's budget for ``hour``; ``False`` when it is spent."""
        ...


def park_view(parked: Parked) -> dict[str, Any]:
    """The item as the API and the CLI show it (the body parsed when it is JSON)."""
    try:
        body: Any = json.loads(parked.body)
    except ValueError:
        body = parked.body
    return {
        "park_id": parked.park_id,
        "tenant_id": parked.tenant_id,
        "status": parked.status.value,
        "kind": None if parked.kind is None else parked.kind.value,
        "reason": parked.reason,
        "field": parked.field,
        "stage": parked.stage,
        "quarantine_reason": parked.quarantine_reason,
        "type": parked.type_name,
        "source": parked.source,
        "at": parked.at.isoformat(),
        "body": body,
        "proposal": None if parked.proposal is None else json.loads(parked.proposal),
        "resubmitted_id": parked.resubmitted_id,
        "decided_by": parked.decided_by,
        "decided_reason": parked.decided_reason,
    }
