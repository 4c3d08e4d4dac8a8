"""The ports the stages depend on; AWS adapters and in-memory fakes implement them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.envelope import Envelope
from intentbus.errors import IntentbusError
from intentbus.frozen import Frozen, fields_repr, frozen_dataclass
from intentbus.journal import Commit, CommitResult, LogEntry, Snapshot

if TYPE_CHECKING:
    from intentbus.execution_claim import Claim, ClaimRequest


class Clock(Protocol):
    def now(self) -> datetime: ...


class WorkflowStore(Protocol):
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
        """In one read: the run's state, this stage's entry for the input, and as asked a resource's
        version, other stages' entries (``(stage, input_id)``: what they recorded) and a command's
        recorded authorization."""
        ...

    def commit(self, commit: Commit) -> CommitResult: ...

    def entries(self, tenant_id: str, run_id: str) -> list[LogEntry]: ...


@frozen_dataclass(init=False, repr=False, unsafe_hash=True)  # immutable (Frozen): hashed by value
class SnapshotRequest(Frozen):
    """The arguments of one ``WorkflowStore.snapshot``: what a record will read, known before it is read."""

    tenant_id: str
    run_id: str
    stage: str
    input_id: str
    resource: str | None = None
    proofs: tuple[tuple[str, str], ...] = ()
    authorization: str | None = None

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        tenant_id: str,
        run_id: str,
        stage: str,
        input_id: str,
        resource: str | None = None,
        proofs: tuple[tuple[str, str], ...] = (),
        authorization: str | None = None,
    ) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["tenant_id"] = tenant_id
        fields["run_id"] = run_id
        fields["stage"] = stage
        fields["input_id"] = input_id
        fields["resource"] = resource
        fields["proofs"] = proofs
        fields["authorization"] = authorization

    __repr__ = fields_repr

    def read_alone(self, store: WorkflowStore) -> Snapshot:
        """This snapshot, read by its own ``snapshot`` call."""
        return store.snapshot(
            self.tenant_id,
            self.run_id,
            self.stage,
            self.input_id,
            resource=self.resource,
            proofs=self.proofs,
            authorization=self.authorization,
        )


class ReadsInBatches(Protocol):
    def snapshots(self, requests: Sequence[SnapshotRequest]) -> dict[SnapshotRequest, Snapshot]:
        """Several records' snapshots in as few reads as the store allows, each exactly what ``snapshot``
        would return for it. A request missing from the answer was not read (the store was throttled or
        left its keys unprocessed): its caller reads it alone. Raises only as ``snapshot`` would."""
        ...


class ExecutionGuard(Protocol):
    def claim(
        self,
        *,
        tenant_id: str,
        run_id: str,
        command_id: str,
        resource: str | None,
        seen_version: int | None,
        authorization: str | None,
        now: datetime,
        definition: tuple[str, str] | None = None,
    ) -> Claim:
        """In one write: the run exists and has not ended, the command's recorded authorization has
        this digest (``authorization_digest``), and (with a resource) the resource is still at
        ``seen_version`` or already claimed by this command; claiming moves it to ``seen_version + 1``.
        ``authorization=None`` skips the authorization check: only for a run that predates it.
        ``definition`` (workflow, version): the run must have been started under it (a run stored
        before definitions were stored passes)."""
        ...

    def predates_authorizations(self, tenant_id: str, run_id: str) -> bool:
        """Whether the run exists and started before authorizations were recorded (a legacy run)."""
        ...


@runtime_checkable
class ChecksAhead(Protocol):
    """A guard that can read what a batch's claims will check before they are made, in fewer calls."""

    def prefetch(self, requests: Sequence[ClaimRequest]) -> None:
        """Reads together what these claims check; each answer is served once, to the next claim whose
        ``key`` is its request's. A request left unanswered, and any later claim, reads alone. Never
        raises: a failed read leaves every claim to read alone."""
        ...

    def forget(self) -> None:
        """Drops every answer not yet served (the batch is over)."""
        ...


class Bus(Protocol):
    def publish(self, envelopes: Sequence[Envelope]) -> None:
        """Publish all or raise; entries that fail are retried, never dropped."""
        ...


class Quarantine(Protocol):
    def put(
        self,
        *,
        stage: str,
        reason: str,
        field: str | None,
        body: str,
        message_id: str | None,
        raw_output: str | None = None,
    ) -> None:
        """``raw_output``: a model's output (decide), kept apart from the reason, which is logged."""
        ...


class DeskQuarantine:
    """The quarantine of a person's desk (approvals, review): a person's decision is never malformed
    input, so anything a desk would quarantine is a configuration fault, raised."""

    def put(
        self,
        *,
        stage: str,
        reason: str,
        field: str | None,
        body: str,
        message_id: str | None,
        raw_output: str | None = None,
    ) -> None:
        from intentbus.errors import ConfigurationError

        raise ConfigurationError(f"a desk quarantines nothing ({stage}: {reason})")


class OutcomeInDoubt(IntentbusError):
    """Raised by work that may have left its effect behind: the runner must remember the attempt, so the
    next one goes through ``after_lapse`` (a check) instead of running the work blindly again."""

    code: ClassVar[str] = "outcome_in_doubt"


class KeyHeldByAnotherCommand(IntentbusError):
    """The idempotency key already belongs to a command with another payload: this one is not it."""

    code: ClassVar[str] = "key_held_by_another_command"


class IdempotentRunner(Protocol):
    def bind(self, context: LambdaContext) -> None:
        """Receives the Lambda context, so an in-progress lock lapses with the invocation."""
        ...

    def run(
        self,
        command: Envelope,
        work: Callable[[], dict[str, Any]],
        after_lapse: Callable[[], dict[str, Any]] | None = None,
        claim: ClaimRequest | None = None,
        dumped: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run ``work`` at most once per tenant and idempotency key; a repeat returns the stored result,
        and a command with the same key but another payload raises ``KeyHeldByAnotherCommand``.

        When an earlier attempt's in-progress lock lapsed (it crashed or timed out mid-way, or raised
        ``OutcomeInDoubt``), the effect may have half-happened: ``after_lapse`` runs instead of ``work``,
        if given. ``OutcomeInDoubt`` leaves the lock in place until its lease lapses, then propagates.

        ``claim``: the guard's claim for ``work``, which a runner on the guard's store may make in the
        same write as its in-progress record (``ClaimRequest.made``); others ignore it.

        ``dumped``: ``command.to_json_dict()``, when the caller has it (never changed after).
        """
        ...


@runtime_checkable
class RunsReadsUnlocked(Protocol):
    """An ``IdempotentRunner`` that can run work which changes nothing without its in-progress lock."""

    def run_read_only(
        self,
        command: Envelope,
        work: Callable[[], dict[str, Any]],
        after_lapse: Callable[[], dict[str, Any]] | None = None,
        claim: ClaimRequest | None = None,
        dumped: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """As ``run``, for work that only reads (a ``ToolEffect.READ_ONLY`` tool whose claim moves no
        resource): ``work`` runs with no in-progress record (it makes its own claim, first), then one
        conditional write stores its result if the key is free. If the key is held by the same command's
        result, that stored result is returned instead of the fresh one, so every delivery answers alike;
        by another payload, ``KeyHeldByAnotherCommand``; by an attempt in progress (or lapsed), the command
        goes the way ``run`` takes it. A runner whose store cannot do this runs ``run``."""
        ...


_CLAIM_NAMES = frozenset({"Claim", "ClaimRequest", "ClaimStatus"})


def __getattr__(name: str) -> Any:
    """The execution guard's claim types live in ``intentbus.execution_claim`` (only execute and its
    adapters make or read a claim, so the other stages never create the classes); imported from here,
    they load there."""
    if name in _CLAIM_NAMES:
        from intentbus import execution_claim

        return getattr(execution_claim, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
