"""The workflow log: one entry per stage per input, written atomically with the state change."""

from dataclasses import field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from intentbus.envelope import Envelope
from intentbus.frozen import Frozen, fields_repr, frozen_dataclass
from intentbus.model_shortcuts import json_text_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from intentbus.approval_record import Approval
    from intentbus.state import WorkflowState
    from intentbus.stored_entry import StoredEntry


class Outcome(StrEnum):
    """Where an input ended. Every message ends in exactly one of these."""

    APPLIED = "applied"
    DUPLICATE = "duplicate"
    STALE = "stale"
    WAITING = "waiting"
    DENIED = "denied"
    PAUSED = "paused"
    QUARANTINED = "quarantined"
    DLQ = "dlq"


class LogEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    stage: str
    input_id: str
    input_type: str
    outcome: Outcome
    at: datetime
    version: int = Field(ge=0)
    """The workflow version once this entry was written."""
    summary: dict[str, Any] = Field(default_factory=dict)
    outputs: tuple[Envelope, ...] = ()
    """What the stage published for this input; a redelivery republishes exactly these. The last field:
    ``log_entry_json`` relies on it."""


_OUTPUTS = {"outputs"}


def log_entry_json(entry: LogEntry) -> str:
    """``entry.model_dump_json()``, byte for byte, each output's JSON made apart and kept as the output's
    ``json_text``: the stage publishes those same outputs next, and the bus sends that text as their
    ``Detail``, so each is serialized once rather than twice. ``outputs`` being the last field, the rest
    is the entry dumped without it, its closing brace then followed by the outputs (no copy of the entry
    made to leave them out). An output that cannot be dumped (a lone surrogate) raises here, as the whole
    entry's dump would."""
    if not entry.outputs:
        return json_text_of(entry)
    texts = [json_text_of(output) for output in entry.outputs]
    for output, text in zip(entry.outputs, texts, strict=True):
        output.__dict__.setdefault("json_text", text)  # what ``Envelope.json_text`` would cache
    if not _OUTPUTS_LAST:  # not the last field any more: the whole dump
        return json_text_of(entry)
    rest = json_text_of(entry, exclude=_OUTPUTS)
    return rest[:-1] + ',"outputs":[' + ",".join(texts) + "]}"


_OUTPUTS_LAST = next(reversed(LogEntry.model_fields)) == "outputs"


class ApprovalStatus(StrEnum):
    PENDING = "PENDING"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    EXPIRED = "EXPIRED"


class Authorization(BaseModel):
    """The pipeline's record that a command may run: written by authorize (an ALLOW verdict) or by an
    approver's APPROVED decision, in the same write as the verdict. Execute's guard checks it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    command_id: str
    fact_id: str
    """The CommandAuthorized that carries it: execute runs only that fact, and record's outcome follows it."""
    digest: str
    """Of the CommandAuthorized fact's id, command and resource version (``authorization_digest``)."""
    command_digest: str
    by: str
    """``authorize`` or ``approval``."""
    at: datetime


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class Commit(Frozen):
    """One atomic write: an optional state change, the log entry, and an optional approval.

    ``expected_version`` is the version read: ``None`` with ``create=True`` means the run must not
    exist yet; with a state it conditions the update; without a state it is only checked.
    """

    entry: LogEntry
    tenant_id: str
    run_id: str
    expected_version: int | None
    state: "WorkflowState | None" = None
    create: bool = False
    approval: "Approval | None" = None
    approval_was: ApprovalStatus | None = None
    """Set when ``approval`` replaces an existing one: the status it must still have (PENDING)."""
    authorization: Authorization | None = None
    """Written with the verdict that allows a command (put if absent)."""

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        entry: LogEntry,
        tenant_id: str,
        run_id: str,
        expected_version: int | None,
        state: "WorkflowState | None" = None,
        create: bool = False,
        approval: "Approval | None" = None,
        approval_was: ApprovalStatus | None = None,
        authorization: Authorization | None = None,
    ) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["entry"] = entry
        fields["tenant_id"] = tenant_id
        fields["run_id"] = run_id
        fields["expected_version"] = expected_version
        fields["state"] = state
        fields["create"] = create
        fields["approval"] = approval
        fields["approval_was"] = approval_was
        fields["authorization"] = authorization
        self.__post_init__()

    __repr__ = fields_repr

    def __post_init__(self) -> None:
        if self.state is not None and not self.create and self.expected_version is None:
            raise ValueError("a state update must be conditioned on the version it read")
        if self.create and (self.state is None or self.expected_version is not None):
            raise ValueError("creating a run takes its first state and no expected version")


@frozen_dataclass(init=False, repr=False, unsafe_hash=True)  # immutable (Frozen): hashed by value
class Snapshot(Frozen):
    """What one store read found for a stage's input: the run, this stage's entry, what else was asked."""

    state: "WorkflowState | None"
    entry: LogEntry | None
    """This stage's entry for this input, if it was already recorded (a redelivery)."""
    resource_version: int | None = None
    """The version of the resource asked for (0 if it was never changed); ``None`` if none was."""
    proofs: "dict[str, LogEntry | StoredEntry]" = field(default_factory=dict)
    """Other stages' entries asked for, by ``proof_key(stage, input_id)``: what they recorded publishing
    (as the store holds them, ``StoredEntry``, when it reads them: validated only if their text cannot
    tell)."""
    authorization: Authorization | None = None
    """The command's recorded authorization, when asked for."""

    def __init__(
        self,
        state: "WorkflowState | None",
        entry: LogEntry | None,
        resource_version: int | None = None,
        proofs: "dict[str, LogEntry | StoredEntry] | None" = None,
        authorization: Authorization | None = None,
    ) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["state"] = state
        fields["entry"] = entry
        fields["resource_version"] = resource_version
        fields["proofs"] = {} if proofs is None else proofs
        fields["authorization"] = authorization

    @classmethod
    def state_read_later(
        cls,
        read_state: "Callable[[], WorkflowState]",
        run: tuple[str, str, str] | None,
        entry: LogEntry | None,
        *,
        resource_version: int | None = None,
        proofs: "dict[str, LogEntry | StoredEntry] | None" = None,
        authorization: Authorization | None = None,
    ) -> "Snapshot":
        """A snapshot of a run whose state is read (``read_state``) only when ``state`` is first asked for;
        ``run``: what its stored item says of it besides, its status, workflow and definition version (written
        with the state, in one put); ``None`` if it does not say them all.
        A stage that needs no more of the run than that never reads the state."""
        snapshot = cls(None, entry, resource_version, proofs, authorization)
        fields = snapshot.__dict__
        del fields["state"]  # read when first asked for (``__getattr__``)
        fields["_read_state"] = read_state
        fields["_run"] = run
        return snapshot

    if not TYPE_CHECKING:  # to a type checker, a snapshot has its fields and nothing else

        def __getattr__(self, name: str) -> Any:
            """``state`` of a snapshot made by ``state_read_later``: read now, once."""
            read_state = self.__dict__.get("_read_state") if name == "state" else None
            if read_state is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            state = read_state()
            object.__setattr__(self, "state", state)
            return state

    __repr__ = fields_repr

    def proof(self, stage: str, input_id: str) -> "LogEntry | StoredEntry | None":
        return self.proofs.get(proof_key(stage, input_id))

    def run_definition(self) -> tuple[str, str] | None:
        """The workflow and definition version of the run, while it goes on: ``None`` when there is no run
        or it has ended. What the retired-run check needs (intentbus.stages.retired), without the state
        when the stored item says it."""
        run: tuple[str, str, str] | None = self.__dict__.get("_run")
        if run is not None and "state" not in self.__dict__:
            from intentbus.run_status import TERMINAL  # loaded by every stage that checks a run

            status, workflow, definition_version = run
            return None if status in TERMINAL else (workflow, definition_version)
        state = self.state
        if state is None or state.terminal:
            return None
        return state.workflow, state.definition_version


def proof_key(stage: str, input_id: str) -> str:
    return f"{stage}#{input_id}"


class CommitStatus(StrEnum):
    COMMITTED = "committed"
    ALREADY_RECORDED = "already_recorded"
    VERSION_CONFLICT = "version_conflict"


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class CommitResult(Frozen):
    """How a stage's write ended: committed, already recorded, or a version conflict."""

    status: CommitStatus
    entry: LogEntry | None = None
    """The entry already recorded, when status is ALREADY_RECORDED."""

    def __init__(self, status: CommitStatus, entry: LogEntry | None = None) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["status"] = status
        fields["entry"] = entry

    __repr__ = fields_repr


def __getattr__(name: str) -> Any:
    """``Approval`` lives in ``intentbus.approval_record`` (only what reads or makes approvals creates the
    class); imported from here, it loads there."""
    if name == "Approval":
        from intentbus.approval_record import Approval

        return Approval
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
