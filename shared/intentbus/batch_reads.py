"""A batch's snapshot reads made together: one read for the records of an SQS batch, served one by one.

Before a batch is processed, each stage says what each record will read (``Stage.reads``, from the record
alone); ``BatchReads.prefetch`` reads those snapshots in one call of the store (``ReadsInBatches``), and
each record's ``snapshot`` is then served from it instead of its own call. What keeps that correct:

- A prefetched snapshot is served at most once, and only for exactly the request it was read for (the
  record's own tenant, run, input, proofs, authorization and resource): a retry after a version conflict,
  or a neighbour asking the same, reads the store again.
- Only the first record of each run in the batch is prefetched for: a later record of that run reads
  after the earlier one wrote. A commit on a run also drops what was prefetched for it.
- A batch read that fails (throttling, a 5xx, keys left unprocessed) leaves the records concerned to
  read alone, as they did before: no record fails because of a neighbour.
- A stage whose records take long (decide with a model) says it reads nothing ahead (``None``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from intentbus.journal import Commit, CommitResult, LogEntry, Snapshot
from intentbus.ports import ReadsInBatches, SnapshotRequest, WorkflowStore

logger = logging.getLogger(__name__)


class BatchReads:
    """A ``WorkflowStore`` over another, serving the snapshots ``prefetch`` read for the current batch."""

    def __init__(self, store: WorkflowStore) -> None:
        self.store = store
        self._ready: dict[SnapshotRequest, Snapshot] = {}

    @classmethod
    def over(cls, store: WorkflowStore) -> BatchReads:
        return store if isinstance(store, BatchReads) else cls(store)

    def prefetch(self, requests: Iterable[SnapshotRequest | None]) -> None:
        """Reads the snapshots of the batch's first record of each run (``None``: a record that reads
        nothing, or that cannot tell), replacing what an earlier batch left."""
        self._ready = {}
        firsts: dict[tuple[str, str], SnapshotRequest] = {}
        for request in requests:
            if request is not None:
                firsts.setdefault((request.tenant_id, request.run_id), request)
        batch = getattr(self.store, "snapshots", None)
        if len(firsts) < 2 or batch is None:  # a lone record's own read costs the same one call
            return
        reader: ReadsInBatches = self.store  # type: ignore[assignment]
        try:
            self._ready = reader.snapshots(list(firsts.values()))
        except Exception:
            logger.warning("the batch's snapshots could not be read together; each record reads its own")

    def forget(self) -> None:
        self._ready = {}

    @property
    def prefetched(self) -> int:
        """How many prefetched snapshots are still waiting for their record."""
        return len(self._ready)

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
        request = SnapshotRequest(tenant_id, run_id, stage, input_id, resource, tuple(proofs), authorization)
        return self.read(request)

    def read(self, request: SnapshotRequest) -> Snapshot:
        """``snapshot`` with the request's own arguments, for a caller that has made the request."""
        ready = self._ready.pop(request, None)
        return request.read_alone(self.store) if ready is None else ready

    def commit(self, commit: Commit) -> CommitResult:
        if self._ready:
            run = (commit.tenant_id, commit.run_id)
            self._ready = {
                request: ready
                for request, ready in self._ready.items()
                if (request.tenant_id, request.run_id) != run
            }
        return self.store.commit(commit)

    def entries(self, tenant_id: str, run_id: str) -> list[LogEntry]:
        return self.store.entries(tenant_id, run_id)
