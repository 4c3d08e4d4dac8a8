"""A batch's snapshots read together (intentbus.batch_reads): runs end exactly as when each record reads
alone, with one read per batch instead of one per record; a record never gets a read older than its own
batch's writes to its run; a failed batch read costs only the saving; a forged record gains nothing."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import astuple
from datetime import UTC, datetime

import pytest

from intentbus.batch_reads import BatchReads
from intentbus.catalog import Catalog
from intentbus.definition import Agent, ModelAgent
from intentbus.journal import Commit, CommitResult, CommitStatus, LogEntry, Outcome, Snapshot
from intentbus.ports import SnapshotRequest
from intentbus.stages.common import BatchReadingStage
from intentbus.stages.decide import DecideStage
from intentbus.state import Status
from intentbus.testing import InMemoryPipeline, bus_body, route
from intentbus.testing.fakes import InMemoryStore
from tests.fakes import raw_body
from tests.unit import sample_workflow

TENANT = "acme"
T0 = datetime(2026, 12, 1, tzinfo=UTC)
BATCH_SIZE = 10


class WatchedStore(InMemoryStore):
    """Counts the records' own reads, and the commits that lost to a newer version (a stale read's cost)."""

    conflicts: int = 0
    reads: int = 0

    def snapshot(
        self,
        tenant_id: str,
        run_id: str,
        stage: str,
        input_id: str,
        *,
        resource: str | None = None,
        proofs: Sequence[tuple[str, str]] = (),
        authorization: str | None = None,
    ) -> Snapshot:
        self.reads += 1
        return super().snapshot(
            tenant_id, run_id, stage, input_id, resource=resource, proofs=proofs, authorization=authorization
        )

    def commit(self, commit: Commit) -> CommitResult:
        result = super().commit(commit)
        if result.status is CommitStatus.VERSION_CONFLICT:
            self.conflicts += 1
        return result


class UnreadableInBatches(WatchedStore):
    def snapshots(self, requests: Sequence[SnapshotRequest]) -> dict[SnapshotRequest, Snapshot]:
        self.batch_calls += 1
        raise ConnectionError("ProvisionedThroughputExceededException")


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


def run_in_batches(pipeline: InMemoryPipeline, bodies: list[str]) -> None:
    """As Lambda's SQS mapping delivers: up to ten queued records of one stage per invocation, the batch's
    reads made before its records are handled one by one (what ``SqsStageHandler`` does)."""
    queue: deque[tuple[str, str]] = deque(("validate", body) for body in bodies)
    while queue:
        stage = queue[0][0]
        batch = [body for queued, body in queue if queued == stage][:BATCH_SIZE]
        for body in batch:
            queue.remove((stage, body))
        core = pipeline.stages[stage]
        if isinstance(core, BatchReadingStage):
            core.prefetch(batch)
        try:
            for body in batch:
                result = core.handle(body, "msg")
                pipeline.outcomes[(stage, result.outcome.value)] += 1
                for envelope in result.published:
                    target = route(envelope)
                    if target is not None:
                        queue.append((target, bus_body(envelope)))
        finally:
            if isinstance(core, BatchReadingStage):
                core.end_batch()


def journal(pipeline: InMemoryPipeline, run_id: str) -> list[tuple[str, str]]:
    return [(entry.stage, entry.outcome.value) for entry in pipeline.store.entries(TENANT, run_id)]


def test_ten_runs_in_batches_end_as_one_by_one_with_a_read_per_batch_not_per_record() -> None:
    orders = [order(f"o-{n}") for n in range(10)]
    alone = pipeline_on(WatchedStore())
    for body in orders:
        alone.run(body)
    tools_alone = sorted(sample_workflow.RUNS)
    batched_store = WatchedStore()
    batched = pipeline_on(batched_store)

    run_in_batches(batched, orders)

    for n in range(10):
        assert batched.store.states[(TENANT, f"run-o-{n}")].status is Status.COMPLETED
        assert journal(batched, f"run-o-{n}") == journal(alone, f"run-o-{n}")
    assert sorted(sample_workflow.RUNS) == tools_alone  # every tool once per command, as before
    assert batched_store.conflicts == 0  # no record was served a read older than its batch's writes
    assert isinstance(alone.store, WatchedStore)
    # 8 records per run read a snapshot each (validate writes blind; the last outcome goes to no stage)
    assert alone.store.reads == 80
    # Read alone: only a run's second record in a batch (ship's two proposals, and its two outcomes).
    assert batched_store.reads == 20
    assert batched_store.batch_calls == 8  # one read for each batch of the ten runs' reading records


def test_a_batch_read_that_fails_leaves_each_record_to_read_alone(caplog: pytest.LogCaptureFixture) -> None:
    store = UnreadableInBatches()
    pipeline = pipeline_on(store)

    with caplog.at_level(logging.WARNING, logger="intentbus.batch_reads"):
        run_in_batches(pipeline, [order(f"o-{n}") for n in range(4)])

    assert store.batch_calls > 0
    for n in range(4):
        assert store.states[(TENANT, f"run-o-{n}")].status is Status.COMPLETED
    assert "each record reads its own" in caplog.text
    assert store.conflicts == 0


def test_a_forged_fact_in_a_batch_gains_nothing_from_its_neighbours_reads() -> None:
    # The attack: validate accepted o-1's event for run-o-1; a forger replays that EventAccepted into run-o-2
    # in the same decide batch. Its proof (validate's entry for the same event identity) exists only under
    # run-o-1, which its neighbour's read fetched in the same call: it must not see it.
    pipeline = pipeline_on(WatchedStore())
    (accepted,) = pipeline.deliver("validate", order("o-1")).published
    event = dict(accepted.payload["event"]) | {"run_id": "run-o-2"}
    forged = accepted.model_copy(update={"run_id": "run-o-2", "payload": {"event": event}})
    decide = pipeline.stages["decide"]
    assert isinstance(decide, BatchReadingStage)
    bodies = [bus_body(forged), bus_body(accepted)]

    decide.prefetch(bodies)
    results = [decide.handle(body, f"msg-{n}") for n, body in enumerate(bodies)]
    decide.end_batch()

    assert results[0].outcome is Outcome.QUARANTINED
    assert results[0].forged
    assert "validate recorded no EventAccepted" in (results[0].reason or "")
    assert results[1].outcome is Outcome.APPLIED
    assert (TENANT, "run-o-2") not in pipeline.store.states


class RecordingStore(WatchedStore):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[SnapshotRequest]] = []

    def snapshots(self, requests: Sequence[SnapshotRequest]) -> dict[SnapshotRequest, Snapshot]:
        self.batches.append(list(requests))
        return super().snapshots(requests)


def request(run_id: str, input_id: str) -> SnapshotRequest:
    return SnapshotRequest(TENANT, run_id, "record", input_id)


def read(reads: BatchReads, asked: SnapshotRequest) -> None:
    reads.snapshot(asked.tenant_id, asked.run_id, asked.stage, asked.input_id)


def test_only_the_first_record_of_each_run_is_prefetched_and_served_once() -> None:
    store = RecordingStore()
    reads = BatchReads(store)
    first, second, other = request("run-1", "a"), request("run-1", "b"), request("run-2", "c")

    reads.prefetch([first, None, second, other])

    assert store.batches == [[first, other]]
    read(reads, first)
    read(reads, second)  # after the first record of its run: read alone
    read(reads, first)  # a retry (after a version conflict) reads again
    assert store.reads == 2
    assert reads.prefetched == 1


def test_a_request_already_made_is_served_as_its_arguments_are() -> None:
    store = RecordingStore()
    reads = BatchReads(store)
    first, second, other = request("run-1", "a"), request("run-1", "b"), request("run-2", "c")
    reads.prefetch([first, second, other])
    prefetched = reads._ready[first]

    assert reads.read(first) is prefetched
    assert reads.read(second) == store.snapshot(*astuple(second)[:4])
    assert reads.read(first) is not prefetched  # served once: read again
    assert store.reads == 3  # second read alone, the comparison, first read again
    assert reads.prefetched == 1


def test_a_commit_drops_what_was_prefetched_for_its_run_and_a_lone_record_is_not_batched() -> None:
    store = RecordingStore()
    reads = BatchReads(store)
    one, two = request("run-1", "a"), request("run-2", "b")
    reads.prefetch([one, two])
    entry = LogEntry(stage="decide", input_id="x", input_type="T", outcome=Outcome.APPLIED, at=T0, version=0)
    reads.commit(Commit(entry=entry, tenant_id=TENANT, run_id="run-2", expected_version=None))

    assert reads.prefetched == 1
    read(reads, two)
    assert store.reads == 1

    reads.prefetch([request("run-3", "c")])
    assert len(store.batches) == 1  # one record: its own read costs the same one call


class OwnAgents:
    """A model provider that lets each agent decide itself (its fallback): decide then has a model."""

    def agent(self, spec: ModelAgent) -> Agent:
        return spec


def test_decide_with_a_model_reads_each_record_alone_before_asking_the_model() -> None:
    # A model takes seconds a decision: a read made at the batch's start would be stale by then, and a
    # concurrent redelivery's decision missed would cost a second model call (DESIGN rule 1).
    store = WatchedStore()
    pipeline = pipeline_on(store)
    decide = DecideStage(pipeline.deps, store, models=OwnAgents())
    accepted = [pipeline.deliver("validate", order(f"o-{n}")).published[0] for n in range(3)]
    bodies = [bus_body(envelope) for envelope in accepted]

    decide.prefetch(bodies)
    results = [decide.handle(body, "msg") for body in bodies]
    decide.end_batch()

    assert [result.outcome for result in results] == [Outcome.APPLIED] * 3
    assert store.batch_calls == 0
    assert store.reads == 3
