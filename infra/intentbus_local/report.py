"""Where every input event ended, read from what the pipeline left behind: logs, queues, state.

Buckets: applied, duplicate, stale, waiting, denied, quarantined (with its reason), dlq (with its
error), or lost — which the pipeline promises never happens.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from intentbus.adapters.dynamodb_store import LOG_PREFIX, STATE_SK, entry_from_item, is_entry_item, run_pk
from intentbus.bus_event import EventBridgeModel
from intentbus.catalog import Catalog
from intentbus.errors import MalformedInput
from intentbus.facts import PIPELINE_SOURCE
from intentbus.ids import input_identity
from intentbus.inbound import normalize, parse_bus_event
from intentbus.journal import LogEntry, Outcome
from intentbus.state import Status, WorkflowState
from intentbus_local.cloud import LocalCloud, QueueMessage

QUARANTINE_QUEUE = "QuarantineQueue"


@dataclass
class InputReport:
    line: int
    bus_event_id: str
    bucket: str
    type: str | None = None
    event_id: str | None = None
    tenant_id: str | None = None
    run_id: str | None = None
    reason: str | None = None


@dataclass
class RunReport:
    inputs: list[InputReport] = field(default_factory=list)
    workflows: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def _bus_event(envelope: Mapping[str, Any], bus_event_id: str, source: str) -> EventBridgeModel:
    return EventBridgeModel.model_validate(
        {
            "version": "0",
            "id": bus_event_id,
            "detail-type": envelope.get("type", envelope.get("event_type", "")),
            "source": source,
            "account": "000000000000",
            "time": datetime.now(UTC),
            "region": "local",
            "resources": [],
            "detail": dict(envelope),
        }
    )


def _quarantine_reasons(messages: Sequence[QueueMessage]) -> dict[str, str]:
    """Bus event id -> the reason validate gave."""
    reasons: dict[str, str] = {}
    for message in messages:
        record = message.json()
        try:
            original = json.loads(record["body"])
            reasons[str(original["id"])] = str(record["reason"])
        except (ValueError, KeyError, TypeError):
            continue
    return reasons


def _dlq_runs(cloud: LocalCloud, catalog: Catalog) -> dict[tuple[str, str], str]:
    """(tenant, run) -> which stage's DLQ holds a message of that run.

    A raw input that validate dead-lettered may carry no run id: it is derived as validate does.
    """
    runs: dict[tuple[str, str], str] = {}
    for stage_queue, dlq in cloud.topology.dlqs.items():
        for message in cloud.queue_messages(dlq.logical_id):
            try:
                bus_event = parse_bus_event(message.body)
                detail = bus_event.detail
                inner = detail.get("payload", {}) if isinstance(detail, dict) else {}
                envelope = (
                    inner.get("event") or inner.get("command")
                    if bus_event.source == PIPELINE_SOURCE
                    else None
                )
                if envelope is None:
                    accepted, _ = normalize(bus_event, catalog.types)
                    key = (accepted.tenant_id, accepted.run_id)
                else:
                    key = (str(envelope["tenant_id"]), str(envelope["run_id"]))
                runs[key] = f"in {dlq.logical_id}"
            except (MalformedInput, ValueError, KeyError, TypeError, AttributeError):
                runs[("?", message.message_id)] = (
                    f"unparseable message in {dlq.logical_id} from {stage_queue}"
                )
    return runs


def bucket_of(
    entries: Sequence[LogEntry], state: WorkflowState | None, identity: str
) -> tuple[str, str | None]:
    """How the first delivery of an accepted event ended, from the run's log and state (``identity``:
    the input's, ``intentbus.ids.input_identity``, which keys validate's entry)."""
    accepted = next((e for e in entries if e.stage == "validate" and e.input_id == identity), None)
    if accepted is None:
        return "lost", "accepted by nothing: no validate entry"
    fact_ids = {output.id for output in accepted.outputs}
    follow = next((e for e in entries if e.input_id in fact_ids and e.stage in ("decide", "authorize")), None)
    if follow is not None and follow.outcome in (Outcome.STALE, Outcome.DENIED):
        return follow.outcome.value, str(follow.summary.get("reason"))
    if state is None:
        return "applied", None
    if state.status in (Status.AWAITING_APPROVAL, Status.PAUSED):
        return "waiting", state.reason or state.status.value
    if state.status in (Status.DENIED, Status.CANCELLED):  # refused by policy, or by a person at review
        return "denied", state.reason or state.status.value
    if state.status is Status.FAILED:
        return "applied", state.reason  # it ran: the failure is its outcome, and the reason says so
    return "applied", None


class TableSnapshot:
    """The workflow table read once, with a paginated Scan: each run's state and log as the store reads
    them, without a Query per input (moto answers a Query by scanning every item)."""

    def __init__(self, items: Iterable[Mapping[str, Any]]) -> None:
        """``items``: the table's items in the Scan's order (``scanned``)."""
        self._states: dict[str, WorkflowState] = {}
        self._entries: dict[str, list[LogEntry]] = defaultdict(list)
        for item in items:
            pk, sk = item["pk"]["S"], item["sk"]["S"]
            if sk == STATE_SK and "state" in item:
                self._states[pk] = WorkflowState.model_validate_json(item["state"]["S"])
            elif sk.startswith(LOG_PREFIX) and is_entry_item(item):
                self._entries[pk].append(entry_from_item(item))

    @classmethod
    def scanned(cls, table: str, client: Any) -> TableSnapshot:
        return cls(
            item
            for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
            for item in page.get("Items", [])
        )

    def state(self, tenant_id: str, run_id: str) -> WorkflowState | None:
        return self._states.get(run_pk(tenant_id, run_id))

    def entries(self, tenant_id: str, run_id: str) -> list[LogEntry]:
        found = self._entries.get(run_pk(tenant_id, run_id), [])
        return sorted(found, key=lambda entry: (entry.at, entry.version))


def build(
    cloud: LocalCloud,
    catalog: Catalog,
    sent: Sequence[tuple[int, Mapping[str, Any], str, str]],
    *,
    snapshot: TableSnapshot | None = None,
) -> RunReport:
    """``sent``: (line, envelope, bus event id, source) for every input, in order. ``snapshot``: the
    workflow table as the caller already read it (else it is scanned here)."""
    store = snapshot
    if store is None:
        store = TableSnapshot.scanned(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
    quarantine = _quarantine_reasons(cloud.queue_messages(QUARANTINE_QUEUE))
    dlq_runs = _dlq_runs(cloud, catalog)
    report = RunReport()
    seen: set[tuple[str, str, str]] = set()
    runs: dict[tuple[str, str], WorkflowState | None] = {}
    for line, envelope, bus_event_id, source in sent:
        declared = envelope.get("type", envelope.get("event_type"))
        item = InputReport(
            line=line,
            bus_event_id=bus_event_id,
            bucket="lost",
            type=declared if isinstance(declared, str) else None,
        )
        try:
            accepted, _ = normalize(_bus_event(envelope, bus_event_id, source), catalog.types)
        except MalformedInput as error:
            item.bucket = "quarantined" if bus_event_id in quarantine else "lost"
            item.reason = quarantine.get(bus_event_id, f"expected in quarantine: {error.reason}")
            report.inputs.append(item)
            continue
        item.type, item.event_id = accepted.type, accepted.id
        item.tenant_id, item.run_id = accepted.tenant_id, accepted.run_id
        identity = input_identity(accepted.tenant_id, accepted.source, accepted.id)
        key = (accepted.tenant_id, accepted.run_id, identity)
        run = (accepted.tenant_id, accepted.run_id)
        if key in seen:
            item.bucket, item.reason = "duplicate", "the same event id was already accepted"
        elif bus_event_id in quarantine:  # refused past the schema: a producer not bound to the tenant
            item.bucket, item.reason = "quarantined", quarantine[bus_event_id]
        elif run in dlq_runs and not any(
            e.stage == "validate" and e.input_id == identity for e in store.entries(*run)
        ):
            item.bucket, item.reason = "dlq", dlq_runs[run]
        else:
            state = runs.setdefault(run, store.state(*run))
            item.bucket, item.reason = bucket_of(store.entries(*run), state, identity)
            if run in dlq_runs and item.bucket == "applied" and state is not None and not state.terminal:
                item.bucket, item.reason = "dlq", dlq_runs[run]
        seen.add(key)
        runs.setdefault(run, store.state(*run))
        report.inputs.append(item)
    for (tenant_id, run_id), state in sorted(runs.items()):
        report.workflows.append(
            {
                "tenant_id": tenant_id,
                "run_id": run_id,
                "workflow": None if state is None else state.workflow,
                "status": None if state is None else state.status.value,
                "reason": None if state is None else state.reason,
                "version": None if state is None else state.version,
            }
        )
    for item in report.inputs:
        report.counts[item.bucket] = report.counts.get(item.bucket, 0) + 1
    return report


def write(report: RunReport, path: Path) -> None:
    path.write_text(report.to_json() + "\n")
