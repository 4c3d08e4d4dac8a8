"""The ports the stages depend on; AWS adapters and in-memory fakes implement them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.envelope import Envelope
from intentbus.journal import Commit, CommitResult, LogEntry, Snapshot


class Clock(Protocol):
    def now(self) -> datetime: ...


class WorkflowStore(Protocol):
    def snapshot(self, tenant_id: str, run_id: str, stage: str, input_id: str) -> Snapshot:
        """The run's state and this stage's entry for the input, in one read."""
        ...

    def commit(self, commit: Commit) -> CommitResult: ...

    def entries(self, tenant_id: str, run_id: str) -> list[LogEntry]: ...


class Bus(Protocol):
    def publish(self, envelopes: Sequence[Envelope]) -> None:
        """Publish all or raise; entries that fail are retried, never dropped."""
        ...


class Quarantine(Protocol):
    def put(
        self, *, stage: str, reason: str, field: str | None, body: str, message_id: str | None
    ) -> None: ...


class IdempotentRunner(Protocol):
    def bind(self, context: LambdaContext) -> None:
        """Receives the Lambda context, so an in-progress lock lapses with the invocation."""
        ...

    def run(
        self,
        command: Envelope,
        work: Callable[[], dict[str, Any]],
        after_lapse: Callable[[], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Run ``work`` at most once per idempotency key; a repeat returns the stored result.

        When an earlier attempt's in-progress lock lapsed (it crashed or timed out mid-way), the
        effect may have half-happened: ``after_lapse`` runs instead of ``work``, if given.
        """
        ...
