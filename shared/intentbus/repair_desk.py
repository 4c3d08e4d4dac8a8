"""A person's desk for parked inputs: see them, edit and resubmit one, or discard it with a reason.

The tenant is the key's first part, so a person only ever reaches their own tenant's items (another
tenant's id is simply not found). A resubmission is checked here as validate will check it, then put on
the ingress bus as the original's source with ``causation_id`` = the original's id: validate checks it
again, its producer's binding included, so a person's edit is trusted no more than the producer was.
The tenant and the type cannot be changed by an edit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from intentbus.errors import IntentbusError
from intentbus.parked import Parked, ParkStatus, ParkStore
from intentbus.registry import TypeRegistry
from intentbus.repair import Quarantined, RepairFailed, ScriptedRepairer, Submit, repair_quarantined


@dataclass(frozen=True)
class DeskAnswer:
    """The repair desk's answer to a person's request, with the parked item as it now is."""

    status: int
    """An HTTP status: 200 done, 400 an invalid edit, 404 not found, 409 not waiting or not resubmittable."""
    reason: str
    parked: Parked | None = None
    field: str | None = None


@dataclass(frozen=True)
class RepairDesk:
    """Lists a tenant's parked inputs, resubmits one a person edited, or discards one."""

    store: ParkStore
    types: TypeRegistry
    submit: Submit
    now: Callable[[], datetime]

    def waiting(self, tenant_id: str) -> list[Parked]:
        return self.store.waiting(tenant_id)

    def show(self, tenant_id: str, park_id: str) -> Parked | None:
        return self.store.get(tenant_id, park_id)

    def resubmit(
        self,
        tenant_id: str,
        park_id: str,
        *,
        person: str,
        payload: Mapping[str, Any] | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> DeskAnswer:
        """Resubmits the parked input with ``detail`` (the whole event detail) or ``payload`` (its payload
        replaced in the original detail; the CloudEvents ``data``)."""
        parked = self.store.get(tenant_id, park_id)
        if parked is None:
            return DeskAnswer(404, "not found")
        if parked.status is not ParkStatus.PARKED:
            return DeskAnswer(409, f"it is {parked.status.value}, not waiting", parked)
        record = Quarantined(
            stage=parked.stage, reason=parked.quarantine_reason, body=parked.body, field=parked.field
        )
        edited = dict(detail) if detail is not None else _with_payload(record, payload or {})
        try:
            done = repair_quarantined(
                record,
                ScriptedRepairer(lambda _request: edited),
                types=self.types,
                submit=self.submit,
                now=self.now,
                attempts=1,
            )
        except RepairFailed as failed:
            last = failed.attempts[-1]
            field = last.get("field")
            return DeskAnswer(400, str(last.get("reason")), parked, field if isinstance(field, str) else None)
        except ValueError as refused:
            return DeskAnswer(409, str(refused), parked)
        except IntentbusError as error:
            return DeskAnswer(502, f"resubmitting failed: {error}", parked)
        settled = replace(
            parked,
            status=ParkStatus.RESUBMITTED,
            resubmitted_id=done.envelope.id,
            decided_by=person,
            decided_at=self.now(),
        )
        if not self.store.settle(settled, expected=ParkStatus.PARKED):
            return DeskAnswer(409, "someone else settled it meanwhile", self.store.get(tenant_id, park_id))
        return DeskAnswer(200, f"resubmitted as {done.envelope.id}", settled)

    def discard(self, tenant_id: str, park_id: str, *, person: str, reason: str) -> DeskAnswer:
        if not reason.strip():
            return DeskAnswer(400, "a discard needs a reason", field="reason")
        parked = self.store.get(tenant_id, park_id)
        if parked is None:
            return DeskAnswer(404, "not found")
        if parked.status is not ParkStatus.PARKED:
            return DeskAnswer(409, f"it is {parked.status.value}, not waiting", parked)
        settled = replace(
            parked,
            status=ParkStatus.DISCARDED,
            decided_by=person,
            decided_reason=reason.strip(),
            decided_at=self.now(),
        )
        if not self.store.settle(settled, expected=ParkStatus.PARKED):
            return DeskAnswer(409, "someone else settled it meanwhile", self.store.get(tenant_id, park_id))
        return DeskAnswer(200, "discarded", settled)


def _with_payload(record: Quarantined, payload: Mapping[str, Any]) -> dict[str, Any]:
    detail = dict(record.detail or {})
    detail["data" if "specversion" in detail else "payload"] = dict(payload)
    return detail
