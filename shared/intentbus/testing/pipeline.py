"""The five stage cores in memory, with the fakes, routing what they publish as the template's rules do.

Nothing moves until the test says so: ``emit`` and ``approve`` queue, ``run_until_idle`` delivers every
queued message, what the stages publish in turn, and the approvals the clock let lapse, until nothing is
left.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intentbus.approval_record import Approval
from intentbus.approvals import Answer, ApprovalDesk, Approver, Result
from intentbus.catalog import Catalog
from intentbus.claims import ClaimCheckingBus, InMemoryClaims, fit
from intentbus.definition import ClientProvider, CommandSpec, ModelProvider, Tool, ToolContext, Workflow
from intentbus.envelope import Envelope
from intentbus.limits import claim_check_threshold
from intentbus.producers import ProducerBindings
from intentbus.stages.authorize import AuthorizeStage
from intentbus.stages.common import StageCore, StageDeps, StageResult
from intentbus.stages.decide import DecideStage
from intentbus.stages.execute import ExecuteStage
from intentbus.stages.record import RecordStage
from intentbus.stages.validate import ValidateStage
from intentbus.state import WorkflowState
from intentbus.testing.bodies import DEFAULT_SOURCE, bus_body, producer_body, source_of, type_of
from intentbus.testing.clients import ClientMap, NoClients
from intentbus.testing.clock import VirtualClock
from intentbus.testing.fakes import InMemoryRunner, InMemoryStore, ListQuarantine, RecordingBus
from intentbus.testing.routing import route
from intentbus.testing.timeline import TimelineEntry, timeline

ANY_SOURCE_ANY_TENANT = "*=*"
DEFAULT_APPROVER = "tester"
MAX_DELIVERIES = 10_000


class PipelineDidNotSettle(AssertionError):
    """Deliveries kept coming (a loop the workflow's budgets did not stop)."""


@dataclass(frozen=True)
class Quarantined:
    """An input validate (or a later stage) refused, and why."""

    stage: str
    reason: str
    field: str | None
    body: str
    raw_output: str | None = None
    """A model's raw answer, when the model's output was what was refused."""


class _ToolCountingCatalog(Catalog):
    """The catalog the stages see: the same workflows, each tool counted every time it runs."""

    def __init__(self, catalog: Catalog, runs: Counter[str]) -> None:
        vars(self).update(vars(catalog))
        self._runs = runs

    def command(self, type_name: str) -> CommandSpec | None:
        spec = super().command(type_name)
        if spec is None:
            return None
        return dataclasses.replace(spec, tool=_counted(spec.tool, self._runs))


def _provider(clients: ClientProvider | Mapping[str, Any]) -> ClientProvider:
    return ClientMap(clients) if isinstance(clients, Mapping) else clients


@dataclass(frozen=True)
class _CurrentClients:
    """What execute hands the tools: the pipeline's clients as they are when a tool asks."""

    pipeline: InMemoryPipeline

    def client(self, service_name: str) -> Any:
        return self.pipeline.clients.client(service_name)


def as_approver(approver: str | Approver, tenant_id: str) -> Approver:
    """A person deciding through the CLI, by the id the test gives, unless it gives a whole ``Approver``."""
    return (
        approver if isinstance(approver, Approver) else Approver(id=approver, tenant_id=tenant_id, via="cli")
    )


def _counted(tool: Tool, runs: Counter[str]) -> Tool:
    @functools.wraps(tool.run)
    def run(arguments: Any, context: ToolContext) -> Mapping[str, Any]:
        runs[tool.name] += 1
        return tool.run(arguments, context)

    return dataclasses.replace(tool, run=run)


class InMemoryPipeline:
    """``workflows``: a ``Catalog`` or the ``Workflow``s to register.

    ``clients`` are what tools get as ``context.clients``: a ``{"service": client}`` mapping (e.g. boto3
    clients inside ``moto.mock_aws()``, or fakes) or any object with ``client(service_name)``; by default
    none, and a tool that asks for one fails the test; ``pipeline.clients = {...}`` sets them later (e.g.
    on the ``intentbus_pipeline`` fixture). ``settings`` are the tools' ``context.settings``
    (the functions' environment; ``pipeline.settings`` is that mapping, to change on the fixture).
    ``producers`` are the ProducerBindings (text or parsed); by default any
    source may send for any tenant. ``models`` decides for model agents (by default their fallbacks).
    """

    def __init__(
        self,
        workflows: Catalog | Iterable[Workflow],
        *,
        environment: str = "dev",
        clock: VirtualClock | None = None,
        clients: ClientProvider | Mapping[str, Any] | None = None,
        settings: Mapping[str, str] | None = None,
        producers: ProducerBindings | str = ANY_SOURCE_ANY_TENANT,
        source: str = DEFAULT_SOURCE,
        models: ModelProvider | None = None,
        store: InMemoryStore | None = None,
        bus: RecordingBus | None = None,
        quarantine: ListQuarantine | None = None,
        runner: InMemoryRunner | None = None,
        claims: InMemoryClaims | None = None,
        pipeline_roles: Mapping[str, str] | None = None,
        id_salt: str = "",
    ) -> None:
        self.catalog = workflows if isinstance(workflows, Catalog) else Catalog(workflows)
        self.environment = environment
        self.clock = clock if clock is not None else VirtualClock()
        self._clients: ClientProvider = NoClients() if clients is None else _provider(clients)
        self.producers = (
            producers if isinstance(producers, ProducerBindings) else ProducerBindings.parse(producers)
        )
        self.source = source
        self.store = store if store is not None else InMemoryStore()
        self.bus = bus if bus is not None else RecordingBus()
        self.quarantine = quarantine if quarantine is not None else ListQuarantine()
        self.runner = runner if runner is not None else InMemoryRunner()
        self.claims = claims if claims is not None else InMemoryClaims()
        """The claim-check bucket, in memory: change ``claims.objects`` to play someone who swaps one."""
        self.claim_threshold = claim_check_threshold(dict(settings or {}))
        self.pipeline_roles = dict(pipeline_roles or {})
        self.id_salt = id_salt
        self.outcomes: Counter[tuple[str, str]] = Counter()
        """(stage, outcome) -> deliveries."""
        self.tool_runs: Counter[str] = Counter()
        """Tool name -> times its function ran (a duplicate delivery that reuses a result does not)."""
        self._inbox: deque[tuple[str, str]] = deque()
        self._emitted = 0
        self.deps = StageDeps(
            catalog=_ToolCountingCatalog(self.catalog, self.tool_runs),
            bus=ClaimCheckingBus(self.bus, self.claims, self.claim_threshold),
            quarantine=self.quarantine,
            clock=self.clock,
            environment=self.environment,
            settings=dict(settings or {}),
            producers=self.producers,
            id_salt=self.id_salt,
            pipeline_roles=self.pipeline_roles,
            claims=self.claims,
        )
        self.stages: dict[str, StageCore] = {
            "validate": ValidateStage(self.deps, self.store),
            "decide": DecideStage(self.deps, self.store, models=models),
            "authorize": AuthorizeStage(self.deps, self.store),
            "execute": ExecuteStage(self.deps, self.runner, _CurrentClients(self), self.store),
            "record": RecordStage(self.deps, self.store),
        }

    @property
    def clients(self) -> ClientProvider:
        return self._clients

    @clients.setter
    def clients(self, clients: ClientProvider | Mapping[str, Any]) -> None:
        self._clients = _provider(clients)

    @property
    def settings(self) -> dict[str, str]:
        """The tools' ``context.settings`` (the functions' environment): set them on the fixture with
        ``pipeline.settings["ORDERS_TABLE"] = "orders"``."""
        return self.deps.settings

    # ------------------------------------------------------------------ a test's verbs

    def emit(self, event: Mapping[str, Any] | Envelope) -> None:
        """Queue an event as a producer puts it on the ingress bus: an envelope dict, or a CloudEvent
        (``specversion``, ``source``, ``type``, ``data``...). Its ``source`` is the one it names, else
        the pipeline's ``source``. Nothing runs until ``run_until_idle``."""
        detail = event.to_json_dict() if isinstance(event, Envelope) else event
        if not isinstance(detail, Mapping):
            raise TypeError(f"emit takes an event as a mapping (a dict), not a {type(event).__name__}")
        self._emitted += 1
        body = producer_body(
            dict(detail),
            detail_type=type_of(detail),
            source=source_of(detail, self.source),
            time=self.clock.now(),
            event_id=f"eb-emitted-{self._emitted}",
        )
        self._inbox.append(("validate", body))

    def run_until_idle(self, *, max_deliveries: int = MAX_DELIVERIES) -> None:
        """Deliver everything queued and everything that follows from it; then expire the approvals
        whose time passed on the clock (as the template's scheduled sweep does) and deliver what that
        published, until nothing is left."""
        while True:
            self._drain(self._inbox, max_deliveries)
            expired = [envelope for result in self.desk.expire_due() for envelope in result.published]
            if not expired:
                return
            self._queue(expired)

    def state(self, tenant_id: str, run_id: str) -> WorkflowState | None:
        return self.store.states.get((tenant_id, run_id))

    def runs(self, tenant_id: str) -> list[WorkflowState]:
        """Every run of the tenant, oldest first (a run started by an event with no ``run_id`` gets a
        derived one: find it here)."""
        found = [state for (tenant, _), state in self.store.states.items() if tenant == tenant_id]
        return sorted(found, key=lambda state: (state.started_at, state.run_id))

    def timeline(self, tenant_id: str, run_id: str) -> list[TimelineEntry]:
        return timeline(self.store.entries(tenant_id, run_id))

    def pending_approvals(self, tenant_id: str) -> list[Approval]:
        return self.desk.pending(tenant_id)

    def approve(
        self, approval_id: str, *, approver: str | Approver = DEFAULT_APPROVER, reason: str = ""
    ) -> Result:
        """Decide as ``approver`` (an id, or an ``Approver``); what the decision publishes is queued."""
        return self._decide(approval_id, approver, reason, approve=True)

    def reject(
        self, approval_id: str, *, approver: str | Approver = DEFAULT_APPROVER, reason: str = ""
    ) -> Result:
        return self._decide(approval_id, approver, reason, approve=False)

    @property
    def quarantined(self) -> list[Quarantined]:
        return [
            Quarantined(
                stage=record["stage"],
                reason=record["reason"],
                field=record["field"],
                body=record["body"],
                raw_output=record.get("raw_output"),
            )
            for record in self.quarantine.records
        ]

    @property
    def published(self) -> list[Envelope]:
        """Everything the stages and desks published, in order."""
        return list(self.bus.published)

    # ------------------------------------------------------------------ finer control

    @property
    def desk(self) -> ApprovalDesk:
        return ApprovalDesk(self.deps, self.store, frozenset(self.pipeline_roles.values()))

    def deliver(self, stage: str, body: str) -> StageResult:
        """One delivery of a raw SQS body to one stage; nothing that it publishes is delivered."""
        result = self.stages[stage].handle(body, "msg-1")
        self.outcomes[(stage, result.outcome.value)] += 1
        return result

    def follow(self, published: Sequence[Envelope], *, max_hops: int = MAX_DELIVERIES) -> None:
        """Route what something outside the stages published (e.g. an approval) until nothing is left."""
        queue: deque[tuple[str, str]] = deque()
        for envelope in published:
            target = route(envelope)
            if target is not None:
                queue.append((target, self._body(envelope)))
        self._drain(queue, max_hops)

    def run(self, body: str, *, max_hops: int = MAX_DELIVERIES) -> None:
        """Deliver a raw bus body to validate, then everything published, until nothing is left."""
        self._drain(deque([("validate", body)]), max_hops)

    # ------------------------------------------------------------------ inside

    def _decide(self, approval_id: str, approver: str | Approver, reason: str, *, approve: bool) -> Result:
        found = self.store.approvals.get(approval_id)
        if found is None:
            return Result(Answer.NOT_FOUND, f"no approval {approval_id}")
        who = as_approver(approver, found.tenant_id)
        result = self.desk.decide(
            tenant_id=found.tenant_id, approval_id=approval_id, approver=who, approve=approve, reason=reason
        )
        self._queue(result.published)
        return result

    def _queue(self, published: Iterable[Envelope]) -> None:
        for envelope in published:
            target = route(envelope)
            if target is not None:
                self._inbox.append((target, self._body(envelope)))

    def _body(self, envelope: Envelope) -> str:
        """What the bus delivers of a published fact: claim-checked as the bus published it."""
        return bus_body(fit(envelope, self.claims, self.claim_threshold))

    def _drain(self, queue: deque[tuple[str, str]], max_deliveries: int) -> None:
        delivered = 0
        while queue:
            delivered += 1
            if delivered > max_deliveries:
                raise PipelineDidNotSettle(f"the pipeline did not settle within {max_deliveries} deliveries")
            stage, body = queue.popleft()
            for envelope in self.deliver(stage, body).published:
                target = route(envelope)
                if target is not None:
                    queue.append((target, self._body(envelope)))
