"""A batch's outbox: the facts its records publish, held and sent together when the batch ends.

While a batch is open (``batch()``), a bus that holds its entries here (``hold``) sends nothing: each
entry is tagged with the record being handled (``record(key)``), and at the batch's end the bus sends
them all in as few PutEvents requests as AWS's limits allow. A record whose entries were not all
accepted is then reported as failed, so SQS redelivers it and its stage publishes its recorded facts
again (DESIGN rule 1): nothing is acknowledged before its facts are on the bus.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

Entry = dict[str, Any]


class Outbox:
    def __init__(self) -> None:
        self._held: list[tuple[Hashable, Entry]] | None = None
        self._record: Hashable = None

    @property
    def open(self) -> bool:
        return self._held is not None

    @contextmanager
    def batch(self) -> Iterator[Outbox]:
        self._held = []
        try:
            yield self
        finally:
            self._held, self._record = None, None

    def record(self, key: Hashable) -> AbstractContextManager[None]:
        """Entries held until this closes belong to the record ``key``."""
        return _RecordScope(self, key)

    def hold(self, entries: list[Entry]) -> bool:
        """Keeps ``entries`` for the batch's end; ``False`` when no batch is open (send them now)."""
        if self._held is None:
            return False
        self._held.extend((self._record, entry) for entry in entries)
        return True

    def take(self) -> list[tuple[Hashable, Entry]]:
        """The entries held so far, each with its record's key; the outbox is empty afterwards."""
        held, self._held = self._held or [], [] if self._held is not None else None
        return held


class _RecordScope(AbstractContextManager[None]):
    """``Outbox.record``'s scope: a class, as a ``@contextmanager`` costs a generator on every record."""

    def __init__(self, outbox: Outbox, key: Hashable) -> None:
        self._outbox, self._key = outbox, key
        self._previous: Hashable = None

    def __enter__(self) -> None:
        self._previous, self._outbox._record = self._outbox._record, self._key

    def __exit__(self, *exc_info: object) -> None:
        self._outbox._record = self._previous
