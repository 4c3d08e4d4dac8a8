"""Which recorded entries decide and authorize read to check the fact they consume (rule 8): only those of
the producer the fact itself names, since every key read bills a read unit, found or not; a fact that
names another producer than the one that recorded it is refused as not recorded."""

from __future__ import annotations

from intentbus.catalog import Catalog
from intentbus.journal import Outcome, Snapshot
from intentbus.ports import SnapshotRequest
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline, bus_body
from intentbus.testing.fakes import InMemoryStore
from tests.fakes import raw_body
from tests.unit import sample_workflow

TENANT = "acme"
AUTHORIZED = 3
"""Commands an order's run authorizes: one reserve, two ships."""


class ProofWatchingStore(InMemoryStore):
    """Keeps the producers' entries each stage asked for, by stage."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, tuple[tuple[str, str], ...]]] = []

    def _read(self, request: SnapshotRequest) -> Snapshot:
        self.asked.append((request.stage, request.proofs))
        return super()._read(request)

    def producers_read_by(self, stage: str) -> list[list[str]]:
        return [[producer for producer, _ in proofs] for asking, proofs in self.asked if asking == stage]


def order(order_id: str) -> str:
    detail = {
        "id": f"evt-{order_id}",
        "tenant_id": TENANT,
        "run_id": f"run-{order_id}",
        "type": "OrderPlaced",
        "payload": {"order_id": order_id, "amount": 3},
    }
    return raw_body(detail, detail_type="OrderPlaced", source="shop.example")


def pipeline_on(store: InMemoryStore) -> InMemoryPipeline:
    sample_workflow.RUNS.clear()
    return InMemoryPipeline(Catalog([sample_workflow.workflow]), store=store)


def test_decide_and_authorize_read_only_the_entry_of_the_producer_their_fact_names() -> None:
    store = ProofWatchingStore()
    pipeline = pipeline_on(store)

    pipeline.run(order("o-1"))

    assert store.states[(TENANT, "run-o-1")].status is Status.COMPLETED
    decide_reads = store.producers_read_by("decide")
    authorize_reads = store.producers_read_by("authorize")
    # the order validate accepted, then the outcome record published that a step follows (the last ends
    # the run and goes to no stage)
    assert decide_reads == [["validate"], ["record"]]
    assert authorize_reads == [["decide"]] * AUTHORIZED


def test_an_agents_proposal_resent_as_if_another_system_sent_it_is_refused() -> None:
    # The attack: decide recorded an agent's proposal; a forger sends it again claiming no agent, so that
    # authorize would look for it among validate's entries (where nothing of the sort was recorded).
    pipeline = pipeline_on(InMemoryStore())
    (accepted,) = pipeline.deliver("validate", order("o-1")).published
    proposed = pipeline.deliver("decide", bus_body(accepted)).published[0]
    assert proposed.payload["agent"] is not None
    forged = proposed.model_copy(update={"payload": dict(proposed.payload) | {"agent": None}})

    refused = pipeline.deliver("authorize", bus_body(forged))
    genuine = pipeline.deliver("authorize", bus_body(proposed))

    assert refused.outcome is Outcome.QUARANTINED
    assert refused.forged
    assert "validate recorded no CommandProposed" in (refused.reason or "")
    assert genuine.outcome is Outcome.APPLIED


def test_an_event_accepted_under_another_id_than_validates_is_refused() -> None:
    # The attack: validate's EventAccepted with a fresh id. Only validate's own derived id names its entry
    # alone; any other id is looked for where a reviewer's resume (or an earlier release) would record it.
    pipeline = pipeline_on(InMemoryStore())
    (accepted,) = pipeline.deliver("validate", order("o-1")).published
    forged = accepted.model_copy(update={"id": "00000000-0000-5000-8000-000000000001"})

    refused = pipeline.deliver("decide", bus_body(forged))

    assert refused.outcome is Outcome.QUARANTINED
    assert refused.forged
    assert (TENANT, "run-o-1") not in pipeline.store.states
