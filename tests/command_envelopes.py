"""A command envelope as execute receives it, for the idempotency tests and bench."""

from __future__ import annotations

from datetime import UTC, datetime

from intentbus.envelope import Envelope, Kind


def command_envelope(
    key: str,
    *,
    id: str | None = None,
    type: str = "charge",
    tenant_id: str = "acme",
    run_id: str = "run-1",
    source: str = "test",
    payload: dict[str, object] | None = None,
) -> Envelope:
    return Envelope(
        id=id or f"cmd-{key}",
        source=source,
        type=type,
        time=datetime.now(UTC),
        kind=Kind.COMMAND,
        tenant_id=tenant_id,
        trace_id="t",
        run_id=run_id,
        step_index=1,
        idempotency_key=key,
        correlation_id=run_id,
        payload=payload if payload is not None else {"invoice": "inv-1"},
    )
