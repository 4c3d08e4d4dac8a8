"""A project's template on the local cloud (moto), driven as a test drives the in-memory pipeline.

Needs the ``local`` extra (moto, samtranslator, cfn-lint); nothing here is imported until a test uses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from intentbus.approval_record import Approval
from intentbus.approvals import ApprovalDesk, Approver, Result
from intentbus.ports import DeskQuarantine
from intentbus.state import WorkflowState
from intentbus.testing.bodies import DEFAULT_SOURCE, put_events_entry
from intentbus.testing.pipeline import ANY_SOURCE_ANY_TENANT, DEFAULT_APPROVER, Quarantined, as_approver
from intentbus.testing.timeline import TimelineEntry, timeline

if TYPE_CHECKING:
    from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
    from intentbus_local.clock import LocalClock
    from intentbus_local.cloud import LocalCloud, RunSummary

QUARANTINE_QUEUE = "QuarantineQueue"
STAGE_FUNCTION = "ValidateFunction"
"""Its environment says which workflows, environment and id salt the stack deployed."""
APPROVALS_FUNCTION = "ApprovalsFunction"
"""Its environment names the pipeline's roles, which may never decide an approval."""


@dataclass(frozen=True)
class _VirtualNow:
    """The local cloud's virtual clock as the pipeline's Clock port (datetimes)."""

    clock: LocalClock

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), tz=UTC)


class CloudPipeline:
    """A running ``LocalCloud`` (``.cloud``) with the verbs of ``InMemoryPipeline``.

    ``emit`` puts events on the ingress bus as a producer (``source``, unless an event names its own);
    ``run_until_idle`` runs every stage until every queue is empty, firing the scheduled rules (the
    approvals sweep) whose time came on ``clock``; ``approve``/``reject`` decide as a person through the
    approvals desk, and what they publish travels on the next ``run_until_idle``.
    """

    def __init__(self, cloud: LocalCloud, *, source: str = DEFAULT_SOURCE) -> None:
        self.cloud = cloud
        self.source = source

    @classmethod
    @contextmanager
    def start(
        cls,
        template: Path,
        *,
        workflows: str | None = None,
        parameters: Mapping[str, str] | None = None,
        mode: Literal["inprocess", "server"] = "inprocess",
        logs_dir: Path | None = None,
        source: str = DEFAULT_SOURCE,
    ) -> Iterator[CloudPipeline]:
        """``workflows`` (modules, comma-separated) overrides the template's ``Workflows`` default;
        ``ProducerBindings`` lets any source send for any tenant unless ``parameters`` says otherwise."""
        import logging
        import warnings

        from intentbus_local.cloud import LocalCloud

        warnings.filterwarnings("ignore", module="moto")
        logging.getLogger("moto").setLevel(logging.ERROR)
        stack = {"ProducerBindings": ANY_SOURCE_ANY_TENANT, **(parameters or {})}
        if workflows:
            stack["Workflows"] = workflows
        with LocalCloud(mode=mode, template_path=template, parameters=stack, logs_dir=logs_dir) as cloud:
            yield cls(cloud, source=source)

    # ------------------------------------------------------------------ a test's verbs

    @property
    def clock(self) -> LocalClock:
        """Virtual time: ``clock.advance(seconds)``, then ``run_until_idle`` fires what came due."""
        return self.cloud.clock

    def emit(self, events: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> list[str]:
        """Put one event or several on the ingress bus; returns EventBridge's event ids."""
        batch = [events] if isinstance(events, Mapping) else list(events)
        return self.cloud.put_events([put_events_entry(event, default_source=self.source) for event in batch])

    def run_until_idle(self, *, max_invocations: int = 1000, deadline_seconds: float = 120.0) -> RunSummary:
        return self.cloud.run_until_idle(max_invocations=max_invocations, deadline_seconds=deadline_seconds)

    def state(self, tenant_id: str, run_id: str) -> WorkflowState | None:
        return self.store.state(tenant_id, run_id)

    def runs(self, tenant_id: str) -> list[WorkflowState]:
        return self.store.runs(tenant_id)

    def timeline(self, tenant_id: str, run_id: str) -> list[TimelineEntry]:
        return timeline(self.store.entries(tenant_id, run_id))

    def pending_approvals(self, tenant_id: str) -> list[Approval]:
        return self.desk.pending(tenant_id)

    def approve(
        self,
        tenant_id: str,
        approval_id: str,
        *,
        approver: str | Approver = DEFAULT_APPROVER,
        reason: str = "",
    ) -> Result:
        return self._decide(tenant_id, approval_id, approver, reason, approve=True)

    def reject(
        self,
        tenant_id: str,
        approval_id: str,
        *,
        approver: str | Approver = DEFAULT_APPROVER,
        reason: str = "",
    ) -> Result:
        return self._decide(tenant_id, approval_id, approver, reason, approve=False)

    @property
    def quarantined(self) -> list[Quarantined]:
        """What waits in the quarantine queue (left there)."""
        found = []
        for message in self.cloud.queue_messages(QUARANTINE_QUEUE):
            record = json.loads(message.body)
            found.append(
                Quarantined(
                    stage=str(record.get("stage")),
                    reason=str(record.get("reason")),
                    field=record.get("field"),
                    body=str(record.get("body", "")),
                    raw_output=record.get("raw_output"),
                )
            )
        return found

    # ------------------------------------------------------------------ the parts

    @property
    def store(self) -> DynamoWorkflowStore:
        from intentbus.adapters.dynamodb_store import DynamoWorkflowStore

        return DynamoWorkflowStore(self.cloud.topology.tables["WorkflowTable"], self.cloud.clients.dynamodb())

    @property
    def desk(self) -> ApprovalDesk:
        """The approvals desk over the stack's table and bus, on the virtual clock."""
        from intentbus.adapters.eventbridge_bus import EventBridgeBus
        from intentbus.adapters.s3_claims import S3Claims
        from intentbus.catalog import Catalog
        from intentbus.claims import ClaimCheckingBus
        from intentbus.limits import claim_check_threshold
        from intentbus.principals import parse_roles
        from intentbus.producers import ProducerBindings
        from intentbus.stages.common import StageDeps

        functions = self.cloud.topology.functions
        stage_environment = functions[STAGE_FUNCTION].environment
        approvals = functions.get(APPROVALS_FUNCTION)
        roles = parse_roles(approvals.environment.get("INTENTBUS_PIPELINE_ROLES", "") if approvals else "")
        bucket = stage_environment.get("INTENTBUS_CLAIM_BUCKET")
        claims = S3Claims(bucket, lambda: self.cloud.clients("s3")) if bucket else None
        deps = StageDeps(
            catalog=Catalog.from_modules(stage_environment["INTENTBUS_WORKFLOWS"]),
            bus=ClaimCheckingBus(
                EventBridgeBus(self.cloud.topology.bus_name, self.cloud.clients.events()),
                claims,
                claim_check_threshold(dict(stage_environment)),
            ),
            quarantine=DeskQuarantine(),
            clock=_VirtualNow(self.cloud.clock),
            environment=stage_environment.get("INTENTBUS_ENVIRONMENT", "dev"),
            producers=ProducerBindings.none(),
            id_salt=stage_environment.get("INTENTBUS_ID_SALT", ""),
            pipeline_roles=roles,
            claims=claims,
        )
        return ApprovalDesk(deps, self.store, frozenset(roles.values()))

    def _decide(
        self, tenant_id: str, approval_id: str, approver: str | Approver, reason: str, *, approve: bool
    ) -> Result:
        who = as_approver(approver, tenant_id)
        return self.desk.decide(
            tenant_id=tenant_id, approval_id=approval_id, approver=who, approve=approve, reason=reason
        )
