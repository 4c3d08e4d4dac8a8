"""``intentbus quarantine parked`` and ``quarantine repair``: what the repair function could not repair.

With ``RepairQuarantined`` on, the repair function drains the quarantine queue: what it cannot repair
waits as an item of the workflow table (``intentbus.parked``). ``parked`` lists them (one tenant's, or
every tenant's through the table's parked index, the unbound ones included); ``repair ID`` resubmits one
with a new payload (``--payload FILE``) or a whole new detail (``--detail FILE``), or discards it with a
reason. A resubmission is checked as validate will check it, then put on the ingress bus as the
original's source, with ``causation_id`` the original's id: validate checks it again, binding included.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from intentbus.adapters.dynamodb_park import DynamoParkStore
from intentbus.parked import Parked, park_view
from intentbus.registry import TypeRegistry
from intentbus.repair import Submit
from intentbus.repair_desk import DeskAnswer, RepairDesk
from intentbus_cli import tables
from intentbus_cli.failures import UsageError


def list_parked(store: DynamoParkStore, tenant: str | None, *, as_json: bool) -> int:
    found = store.waiting(tenant) if tenant else store.waiting_everywhere()
    if as_json:
        print(json.dumps([park_view(parked) for parked in found], indent=2))
        return 0
    rows = [
        (
            parked.park_id,
            parked.tenant_id,
            parked.at.isoformat(timespec="seconds"),
            parked.type_name or "-",
            parked.kind.value if parked.kind else "-",
            parked.reason,
        )
        for parked in found
    ]
    tables.show(("id", "tenant", "parked", "type", "why", "reason"), rows)
    print(f"{len(rows)} parked input(s)" + (f" of tenant {tenant}" if tenant else ""))
    return 0


def repair(
    store: DynamoParkStore,
    *,
    types: TypeRegistry,
    submit: Submit,
    park_id: str,
    tenant: str | None,
    person: str,
    payload: Path | None,
    detail: Path | None,
    discard: bool,
    reason: str | None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> int:
    check_arguments(payload=payload, detail=detail, discard=discard, reason=reason)
    parked = _find(store, park_id, tenant)
    if parked is None:
        print(
            f"intentbus: no parked input {park_id}" + (f" of tenant {tenant}" if tenant else ""),
            file=sys.stderr,
        )
        return 1
    desk = RepairDesk(store=store, types=types, submit=submit, now=now)
    if discard:
        answer = desk.discard(parked.tenant_id, park_id, person=person, reason=reason or "")
    else:
        edited = _read_object(payload or detail)  # type: ignore[arg-type]
        answer = desk.resubmit(
            parked.tenant_id,
            park_id,
            person=person,
            payload=edited if payload is not None else None,
            detail=edited if detail is not None else None,
        )
    return _said(answer)


def check_arguments(*, payload: Path | None, detail: Path | None, discard: bool, reason: str | None) -> None:
    """Refuses a bad combination before anything is looked up."""
    if sum((payload is not None, detail is not None, discard)) != 1:
        raise UsageError("give exactly one of --payload FILE, --detail FILE and --discard")
    if discard and not (reason or "").strip():
        raise UsageError("--discard needs --reason: say why it is dropped")


def _find(store: DynamoParkStore, park_id: str, tenant: str | None) -> Parked | None:
    if tenant:
        return store.get(tenant, park_id)
    return next((parked for parked in store.waiting_everywhere() if parked.park_id == park_id), None)


def _read_object(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror or error}") from None
    except ValueError as error:
        raise UsageError(f"{path}: not JSON: {error}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{path}: expected a JSON object")
    return value


def _said(answer: DeskAnswer) -> int:
    if answer.status == 200:
        print(answer.reason)
        return 0
    where = f" ({answer.field})" if answer.field else ""
    print(f"intentbus: {answer.reason}{where}", file=sys.stderr)
    return 1
