"""Drives the five stage cores in memory, routing what they publish as the template's rules do."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from intentbus import facts
from intentbus.approvals import ApprovalDesk
from intentbus.catalog import Catalog
from intentbus.definition import ClientProvider
from intentbus.envelope import Envelope
from intentbus.producers import ProducerBindings
from intentbus.stages.authorize import AuthorizeStage
from intentbus.stages.common import StageCore, StageDeps, StageResult
from intentbus.stages.decide import DecideStage
from intentbus.stages.execute import ExecuteStage
from intentbus.stages.record import RecordStage
from intentbus.stages.validate import ValidateStage
from tests.fakes import InMemoryRunner, InMemoryStore, ListQuarantine, ManualClock, RecordingBus, bus_body

ROUTES = {
    facts.EVENT_ACCEPTED: "decide",
    facts.COMMAND_PROPOSED: "authorize",
    facts.COMMAND_AUTHORIZED: "execute",
    facts.COMMAND_EXECUTED: "record",
    facts.COMMAND_FAILED: "record",
    facts.COMMAND_DENIED: "record",
    facts.COMMAND_OUTCOME_UNKNOWN: "record",
    facts.COMMAND_CONFLICTED: "record",
    facts.COMMAND_SKIPPED: "record",
}


class NoClients:
    def client(self, service_name: str) -> object:
        raise AssertionError(f"unit tests call no AWS service ({service_name})")


def route(envelope: Envelope) -> str | None:
    if envelope.source != facts.PIPELINE_SOURCE:
        return "validate"
    return ROUTES.get(envelope.type)


@dataclass
class InMemoryPipeline:
    catalog: Catalog
    environment: str = "dev"
    clients: ClientProvider = field(default_factory=NoClients)
    store: InMemoryStore = field(default_factory=InMemoryStore)
    bus: RecordingBus = field(default_factory=RecordingBus)
    quarantine: ListQuarantine = field(default_factory=ListQuarantine)
    clock: ManualClock = field(default_factory=ManualClock)
    runner: InMemoryRunner = field(default_factory=InMemoryRunner)
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    producers: ProducerBindings = field(default_factory=lambda: ProducerBindings.parse("*=*"))
    """Any source may send for any tenant, unless a test binds them."""
    pipeline_roles: dict[str, str] = field(default_factory=dict)
    id_salt: str = ""

    def __post_init__(self) -> None:
        deps = StageDeps(
            catalog=self.catalog,
            bus=self.bus,
            quarantine=self.quarantine,
            clock=self.clock,
            environment=self.environment,
            settings={},
            producers=self.producers,
            id_salt=self.id_salt,
            pipeline_roles=self.pipeline_roles,
        )
        self.deps = deps
        self.stages: dict[str, StageCore] = {
            "validate": ValidateStage(deps, self.store),
            "decide": DecideStage(deps, self.store),
            "authorize": AuthorizeStage(deps, self.store),
            "execute": ExecuteStage(deps, self.runner, self.clients, self.store),
            "record": RecordStage(deps, self.store),
        }

    def deliver(self, stage: str, body: str) -> StageResult:
        result = self.stages[stage].handle(body, "msg-1")
        self.outcomes[(stage, result.outcome.value)] += 1
        return result

    @property
    def desk(self) -> ApprovalDesk:
        return ApprovalDesk(self.deps, self.store, frozenset(self.pipeline_roles.values()))

    def follow(self, published: Sequence[Envelope], *, max_hops: int = 200) -> None:
        """Route what something outside the stages published (e.g. an approval) until nothing is left."""
        for envelope in published:
            target = route(envelope)
            if target is not None:
                self._drain(deque([(target, bus_body(envelope))]), max_hops)

    def run(self, body: str, *, max_hops: int = 200) -> None:
        """Deliver a raw bus body to validate, then everything published, until nothing is left."""
        self._drain(deque([("validate", body)]), max_hops)

    def _drain(self, queue: deque[tuple[str, str]], max_hops: int) -> None:
        hops = 0
        while queue:
            hops += 1
            assert hops <= max_hops, "the pipeline did not settle"
            stage, item = queue.popleft()
            for envelope in self.deliver(stage, item).published:
                target = route(envelope)
                if target is not None:
                    queue.append((target, bus_body(envelope)))
