"""What the execution guard answers when execute claims a command, and what it is asked: made and read
only by execute and its adapters (``intentbus.ports.ExecutionGuard``), so the other stages never load them."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from intentbus.frozen import FrozenPlain
from intentbus.model_shortcuts import json_values

if TYPE_CHECKING:
    from intentbus.envelope import Envelope


class ClaimStatus(StrEnum):
    CLAIMED = "claimed"
    CONFLICT = "conflict"
    """Another command moved the resource past the version this one was authorized at."""
    RUN_ENDED = "run_ended"
    NOT_AUTHORIZED = "not_authorized"
    """No authorization matching this fact is recorded for the command (or no such run exists)."""
    RETIRED = "retired"
    """The run was started under another workflow definition than the one asked for (a redeploy
    removed or replaced it): the command is not run."""


class Claim(FrozenPlain):
    """The guard's answer to claiming a command: its status, and on a refusal what stood in the way.

    Immutable, compared and hashed by its fields, shown with them, as the frozen dataclass it was (written
    by hand: ``intentbus.frozen``)."""

    status: ClaimStatus
    holder: str | None
    """On a conflict: the command holding the resource's current version."""
    run_status: str | None
    """When the run ended: its status."""
    run_definition: tuple[str, str] | None
    """When the run is retired: the workflow and definition version it was started under."""

    def __init__(
        self,
        status: ClaimStatus,
        holder: str | None = None,
        run_status: str | None = None,
        run_definition: tuple[str, str] | None = None,
    ) -> None:
        set_field = object.__setattr__
        set_field(self, "status", status)
        set_field(self, "holder", holder)
        set_field(self, "run_status", run_status)
        set_field(self, "run_definition", run_definition)

    def _fields(self) -> tuple[Any, ...]:
        return (self.status, self.holder, self.run_status, self.run_definition)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Claim)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(status={self.status!r}, holder={self.holder!r}, "
            f"run_status={self.run_status!r}, run_definition={self.run_definition!r})"
        )


class ClaimRequest:
    """The arguments of ``ExecutionGuard.claim`` for one command. A runner on the guard's own store may
    make the claim in the same write as its in-progress record; it then leaves the answer in ``made``.

    Never compared (equal only to itself); shown with its fields."""

    tenant_id: str
    run_id: str
    command_id: str
    resource: str | None
    seen_version: int | None
    authorization: str | None
    now: datetime
    definition: tuple[str, str] | None
    made: Claim | None

    def __init__(  # noqa: PLR0917 - the signature of the dataclass it was
        self,
        tenant_id: str,
        run_id: str,
        command_id: str,
        resource: str | None,
        seen_version: int | None,
        authorization: str | None,
        now: datetime,
        definition: tuple[str, str] | None = None,
        made: Claim | None = None,
    ) -> None:
        self.tenant_id = tenant_id
        self.run_id = run_id
        self.command_id = command_id
        self.resource = resource
        self.seen_version = seen_version
        self.authorization = authorization
        self.now = now
        self.definition = definition
        self.made = made

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"{type(self).__qualname__}({fields})"

    def arguments(self) -> dict[str, Any]:
        return {name: value for name, value in vars(self).items() if name != "made"}

    def take(self) -> Claim | None:
        """The claim made with the in-progress record, once: a later claim asks the guard again."""
        made, self.made = self.made, None
        return made

    def key(self) -> tuple[Any, ...]:
        """What the claim asks, less when (``now``) and its answer: a check read ahead of the claim
        (``ChecksAhead``) is served only to a request with exactly this key."""
        return (
            self.tenant_id,
            self.run_id,
            self.command_id,
            self.resource,
            self.seen_version,
            self.authorization,
            self.definition,
        )


class MadeOutput(dict[str, Any]):
    """The output fact an attempt made, as ``Envelope.to_json_dict`` dumps it, with the envelope it was
    dumped from. A runner that stores it takes its JSON from ``envelope.json_text``, made once and sent as
    the fact's PutEvents detail after, rather than serializing the dict again."""

    __slots__ = ("envelope",)

    def __init__(self, envelope: Envelope, *, json_payload: bool = False) -> None:
        """``json_payload``: the envelope's payload is JSON as a JSON dump gives it (plain dicts, lists,
        strings, ints, floats, booleans and ``None``, as ``model_dump(mode="json")`` makes them), so a dump
        would give it back equal: it is taken as it is, in its place, and the rest dumped (half the CPU)."""
        if not json_payload:
            super().__init__(envelope.to_json_dict())
        else:
            # The dump without the payload is in field order; the payload goes in its place, and the
            # fields after it are moved behind it (~20 k instructions fewer than a comprehension over
            # every field, and no ``model_dump`` wrapper).
            super().__init__(json_values(envelope, exclude=_PAYLOAD))
            self["payload"] = envelope.payload
            for name in _after_payload(type(envelope)):
                self[name] = self.pop(name)
        self.envelope = envelope


_PAYLOAD = {"payload"}
"""What ``MadeOutput`` leaves out of an envelope's dump (never changed)."""

_AFTER_PAYLOAD: dict[type, tuple[str, ...]] = {}


def _after_payload(model: type[Envelope]) -> tuple[str, ...]:
    """The envelope model's field names after ``payload``, in order (``model_fields`` copies them)."""
    names = _AFTER_PAYLOAD.get(model)
    if names is None:
        fields = list(model.__pydantic_fields__)
        names = _AFTER_PAYLOAD[model] = tuple(fields[fields.index("payload") + 1 :])
    return names
