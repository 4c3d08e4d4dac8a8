"""What every stage shares: reading its input fact, quarantining, republishing recorded outputs."""

from __future__ import annotations

import marshal
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from json.encoder import encode_basestring
from operator import itemgetter
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from intentbus.batch_reads import BatchReads
from intentbus.bus_event import EventBridgeModel
from intentbus.catalog import Catalog
from intentbus.claims import ClaimStore, check_out
from intentbus.envelope import Envelope, Kind
from intentbus.errors import IntentbusError, MalformedInput, NotRecorded
from intentbus.extensions import TRACE_CONTEXT
from intentbus.facts import PIPELINE_SOURCE
from intentbus.frozen import Frozen, fields_repr, frozen_dataclass
from intentbus.ids import canonical_json, canonical_json_less, digest, text_digest
from intentbus.inbound import parse_bus_event
from intentbus.journal import Authorization, Commit, CommitStatus, LogEntry, Outcome, Snapshot
from intentbus.model_shortcuts import json_text_of, json_values, validated
from intentbus.ports import Bus, Clock, Quarantine, SnapshotRequest, WorkflowStore
from intentbus.producers import ProducerBindings
from intentbus.stored_entry import StoredEntry

FactT = TypeVar("FactT", bound=BaseModel)


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class StageResult(Frozen):
    """How one message ended, and what the stage published for it."""

    outcome: Outcome
    envelope: Envelope | None = None
    published: tuple[Envelope, ...] = ()
    reason: str | None = None
    forged: bool = False
    """Quarantined because the record does not hold the fact as it claims (``NotRecorded``)."""

    def __init__(
        self,
        outcome: Outcome,
        envelope: Envelope | None = None,
        published: tuple[Envelope, ...] = (),
        reason: str | None = None,
        forged: bool = False,
    ) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["outcome"] = outcome
        fields["envelope"] = envelope
        fields["published"] = published
        fields["reason"] = reason
        fields["forged"] = forged

    __repr__ = fields_repr


class StageCore(Protocol):
    def handle(self, body: str, message_id: str | None = None) -> StageResult: ...

    def reject(self, error: MalformedInput, body: str, message_id: str | None = None) -> StageResult:
        """Quarantines a message that cannot even be handed to ``handle`` (a record without a body)."""
        ...

    def bind(self, context: LambdaContext) -> None: ...


class Stage:
    """Base of the stage cores; ``bind`` receives the Lambda context before a batch."""

    name: ClassVar[str]
    deps: StageDeps

    def bind(self, context: LambdaContext) -> None:
        return None

    def reject(self, error: MalformedInput, body: str, message_id: str | None = None) -> StageResult:
        return quarantined(self.deps, self.name, error, body, message_id)


class BatchReadingStage(Stage):
    """A stage whose records' snapshots are read together, one call per SQS batch (intentbus.batch_reads).

    ``reads`` says what a record will read from its body alone, parsing it as ``handle`` will: the parse
    is kept for ``handle`` (``parsed``), so a record is parsed once."""

    store: WorkflowStore

    def __post_init__(self) -> None:
        self.store = BatchReads.over(self.store)
        self._parsed: dict[str, Any] = {}

    def reads(self, body: str) -> SnapshotRequest | None:
        """What handling ``body`` reads first, with no AWS call; ``None``: nothing, or it cannot tell
        (a claim-checked payload), and the record reads alone. May raise on a malformed body."""
        return None

    def prefetch(self, bodies: Sequence[str]) -> None:
        self._parsed = {}
        requests: list[SnapshotRequest | None] = []
        for body in bodies:
            try:
                requests.append(self.reads(body))
            except Exception:  # malformed: handled (quarantined with its reason) in its turn
                requests.append(None)
        if isinstance(self.store, BatchReads):
            self.store.prefetch(requests)

    def end_batch(self) -> None:
        self._parsed = {}
        if isinstance(self.store, BatchReads):
            self.store.forget()

    def read(self, request: SnapshotRequest) -> Snapshot:
        """``request.read_alone(self.store)``, served from what the batch prefetched when it was."""
        store = self.store
        return store.read(request) if isinstance(store, BatchReads) else request.read_alone(store)

    def parsed(self, body: str) -> Any:
        """What ``reads`` parsed of ``body`` in this batch, once; ``None`` when it did not."""
        return self._parsed.pop(body, None)


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class Fact(Frozen, Generic[FactT]):
    """A pipeline fact read from a message: its envelope and its payload, typed."""

    envelope: Envelope
    payload: FactT

    def __init__(self, envelope: Envelope, payload: FactT) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["envelope"] = envelope
        fields["payload"] = payload

    __repr__ = fields_repr


@dataclass(init=False, eq=False, repr=False)  # never compared nor printed; __init__ by hand
class StageDeps:
    """What every stage is given: the catalog, bus, quarantine, clock and the deployment's settings."""

    catalog: Catalog
    bus: Bus
    quarantine: Quarantine
    clock: Clock
    environment: str
    settings: dict[str, str] = field(default_factory=dict)
    producers: ProducerBindings = field(default_factory=ProducerBindings.none)
    """Which tenants each producer may send for; by default nobody may (``ProducerBindings``)."""
    id_salt: str = ""
    """The deployment's own (the stack's id, ``INTENTBUS_ID_SALT``): the ids a person is shown (approval
    ids) differ between deployments, and stay the same across a redeploy and a redelivery."""
    pipeline_roles: dict[str, str] = field(default_factory=dict)
    """Stage -> its role's canonical ARN (``INTENTBUS_PIPELINE_ROLES``): the principals that propose."""
    claims: ClaimStore | None = None
    """Where claim-checked payloads are kept (``intentbus.claims``): facts read are resolved from it."""

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        catalog: Catalog,
        bus: Bus,
        quarantine: Quarantine,
        clock: Clock,
        environment: str,
        settings: dict[str, str] | None = None,
        producers: ProducerBindings | None = None,
        id_salt: str = "",
        pipeline_roles: dict[str, str] | None = None,
        claims: ClaimStore | None = None,
    ) -> None:
        self.catalog = catalog
        self.bus = bus
        self.quarantine = quarantine
        self.clock = clock
        self.environment = environment
        self.settings = {} if settings is None else settings
        self.producers = ProducerBindings.none() if producers is None else producers
        self.id_salt = id_salt
        self.pipeline_roles = {} if pipeline_roles is None else pipeline_roles
        self.claims = claims


def read_fact(body: str, models: dict[str, type[FactT]], claims: ClaimStore | None = None) -> Fact[FactT]:
    """Parse a pipeline fact delivered from the bus; anything else is malformed.

    A claim-checked payload is fetched from ``claims`` and verified first (``intentbus.claims``)."""
    return fact_of(parse_bus_event(body), models, claims)


def fact_of(
    bus_event: EventBridgeModel, models: dict[str, type[FactT]], claims: ClaimStore | None = None
) -> Fact[FactT]:
    """``read_fact`` of a parsed bus event."""
    if bus_event.detail_type not in models:
        raise MalformedInput(
            f"detail-type {bus_event.detail_type!r} is not one of {sorted(models)}", field="detail-type"
        )
    envelope = detail_envelope(bus_event, claims)
    model = models[bus_event.detail_type]
    try:
        payload = validated(model, envelope.payload)
    except ValidationError as error:
        raise MalformedInput.from_validation(error, model, prefix="detail.payload.") from None
    require_detail_type(bus_event, envelope, field="type")
    return Fact(envelope=envelope, payload=payload)


def require_detail_type(bus_event: EventBridgeModel, envelope: Envelope, *, field: str) -> None:
    """The bus event's detail-type, which the rule routed it by, must be its envelope's type."""
    if envelope.type != bus_event.detail_type:
        raise MalformedInput(
            f"detail-type {bus_event.detail_type!r} does not match the envelope's type {envelope.type!r}",
            field=field,
        )


def detail_envelope(bus_event: EventBridgeModel, claims: ClaimStore | None = None) -> Envelope:
    """The envelope a stage published as the bus event's detail, its claim-checked payload fetched from
    ``claims`` and verified (``intentbus.claims``); with no ``claims``, a claim-checked one raises."""
    try:
        envelope = validated(Envelope, bus_event.detail)
    except ValidationError as error:
        raise MalformedInput.from_validation(error, Envelope, prefix="detail.") from None
    return check_out(envelope, claims)


def pipeline_fact(
    base: Envelope,
    *,
    stage: str,
    type_name: str,
    payload: BaseModel,
    time: datetime,
    version: int,
    index: int = 0,
) -> Envelope:
    """A stage's published fact about ``base``: source intentbus.pipeline, its id derived from base's."""
    return base.follow(
        stage=stage,
        type=type_name,
        kind=Kind.EVENT,
        time=time,
        source=PIPELINE_SOURCE,
        version=version,
        payload=json_values(payload),
        index=index,
    )


def typed_payload(spec_model: type[BaseModel], envelope: Envelope, where: str) -> BaseModel:
    """The envelope's payload as its registered type; a payload that does not fit is malformed."""
    try:
        return spec_model.model_validate(envelope.payload)
    except ValidationError as error:
        raise MalformedInput.from_validation(error, spec_model, prefix=f"{where}.payload.") from None


def quarantined(
    deps: StageDeps,
    stage: str,
    error: MalformedInput,
    body: str,
    message_id: str | None,
    *,
    raw_output: str | None = None,
) -> StageResult:
    """``raw_output``: a model's output, kept in the record apart from the reason (never logged)."""
    deps.quarantine.put(
        stage=stage,
        reason=error.reason,
        field=error.field,
        body=body,
        message_id=message_id,
        raw_output=raw_output,
    )
    return StageResult(
        outcome=Outcome.QUARANTINED, reason=error.reason, forged=isinstance(error, NotRecorded)
    )


def fact_digest(envelope: Envelope) -> str:
    """A fact's content, less its trace context: the publisher stamps that on as it sends (intentbus.spans),
    so the fact a stage recorded and the one it published differ there and only there."""
    return content_digest(envelope.to_json_dict())


def content_digest(content: dict[str, Any]) -> str:
    """The digest of a fact's JSON values (``to_json_dict``), less its trace context: ``fact_digest``."""
    return digest({name: value for name, value in content.items() if name not in TRACE_CONTEXT})


def authorization_digest(
    fact_id: str, command: Envelope, resource_version: int | None, *, dumped: dict[str, Any] | None = None
) -> str:
    """What execute's guard compares: the CommandAuthorized's id, its command and its resource version.

    ``dumped``: ``command.to_json_dict()``, when the caller has it."""
    return _authorization_digest(
        fact_id, command.to_json_dict() if dumped is None else dumped, resource_version
    )


def _authorization_digest(fact_id: str, command: dict[str, Any], resource_version: int | None) -> str:
    return digest({"fact": fact_id, "command": command, "resource_version": resource_version})


def authorization_for(
    fact: Envelope,
    command: Envelope,
    resource_version: int | None,
    *,
    by: str,
    at: datetime,
    dumped: dict[str, Any] | None = None,
) -> Authorization:
    """``dumped``: ``command.to_json_dict()``, when the caller has it (the fact's payload holds it)."""
    # The command dumped and encoded once for both digests: the same texts as
    # ``_authorization_digest`` and ``content_digest`` would encode, byte for byte.
    whole, content = _with_and_without_trace(command.to_json_dict() if dumped is None else dumped)
    rest = _fact_and_version(fact.id, resource_version)
    return validated(
        Authorization,
        {
            "command_id": command.id,
            "fact_id": fact.id,
            "digest": text_digest('{"command":' + whole + "," + rest[1:]),
            "command_digest": text_digest(content),
            "by": by,
            "at": at,
        },
    )


def _fact_and_version(fact_id: str, resource_version: int | None) -> str:
    """``canonical_json({"fact": fact_id, "resource_version": resource_version})``: for a ``str`` id and an
    ``int`` or no version, written as the encoder writes them (its call costs ~10 k instructions)."""
    if type(fact_id) is str and (resource_version is None or type(resource_version) is int):
        version = "null" if resource_version is None else int.__repr__(resource_version)
        return f'{{"fact":{encode_basestring(fact_id)},"resource_version":{version}}}'
    return canonical_json({"fact": fact_id, "resource_version": resource_version})


_ENVELOPE_KEYS = frozenset(Envelope.model_fields)
"""An envelope's JSON values' keys: sorted, the last four are ``traceparent``, ``tracestate``, ``type`` and
``version``, so the trace context's two pairs sit just before the last two in the canonical JSON."""


def _with_and_without_trace(content: dict[str, Any]) -> tuple[str, str]:
    """``canonical_json_less(content, TRACE_CONTEXT)``. For an envelope's JSON values with plain values in
    its last four keys, the text less the trace context is the whole less the two pairs it ends with
    before ``type`` and ``version``: those pairs are encoded as the encoder writes them, found where the
    whole has them, and cut out (encoding the tail twice more, as ``canonical_json_less`` does, costs
    ~45 k instructions)."""
    parent, state = content.get("traceparent"), content.get("tracestate")
    type_name, version = content.get("type"), content.get("version")
    if (
        content.keys() == _ENVELOPE_KEYS
        and type(type_name) is str
        and type(version) is int
        and (parent is None or type(parent) is str)
        and (state is None or type(state) is str)
    ):
        whole = canonical_json(content)
        last = f',"type":{encode_basestring(type_name)},"version":{version}}}'
        trace = (
            f',"traceparent":{"null" if parent is None else encode_basestring(parent)}'
            f',"tracestate":{"null" if state is None else encode_basestring(state)}'
        )
        if whole.endswith(trace + last):
            return whole, whole[: -len(trace) - len(last)] + last
    return canonical_json_less(content, TRACE_CONTEXT)


def same_fact(one: Envelope, other: Envelope) -> bool:
    """Whether two facts' contents are the same (their ``fact_digest``s are equal).

    The same values, of the same types and in the same order, are the same JSON text (``_same_values``):
    a fact read back as its stage published it keeps the order of its keys. Otherwise their JSON texts,
    less the trace context, are compared: the same text is the same content. Only texts that differ (keys
    in another order, as a claim-checked payload's canonical JSON has them; a changed fact) have their
    digests compared, which no order changes."""
    if _same_values(one, other):
        return True
    text = _content_json(one)
    if text is not None and text == _content_json(other):
        return True
    return fact_digest(one) == fact_digest(other)


_TRACE_FIELDS = set(TRACE_CONTEXT)
_PLAIN_VALUES = itemgetter(
    *(name for name in Envelope.model_fields if name not in TRACE_CONTEXT and name not in {"time", "kind"})
)
"""Every field but the trace context, ``time`` and ``kind``, in the order the envelope's JSON has them."""
_NO_REFERENCES = 2
"""marshal's version 2 writes every value whole: from version 3 on, an object held twice is written once
and referred to, so the same content held in other objects would be written otherwise."""


def _same_values(one: Envelope, other: Envelope) -> bool:
    """Whether the two hold, less their trace context, the same values of the same types in the same
    order: then their JSON texts are the same. ``False`` says nothing (the texts tell).

    marshal writes each value with its exact type, so ``1``, ``1.0`` and ``True`` differ, as ``-0.0``
    does from ``0.0``, and a lone surrogate is written as it is; it refuses any type but the builtins
    (subclasses too), so what it cannot tell is left to the texts. Its bytes equal, the values read back
    from them are equal and of the same types, and a JSON value dumps as its value and type say. (A
    bytes-like value is written as bytes: no fact read from JSON holds one.)"""
    if type(one) is not Envelope or type(other) is not Envelope:
        return False
    mine, theirs = one.__dict__, other.__dict__
    time, other_time = mine["time"], theirs["time"]
    if (
        mine["kind"] is not theirs["kind"]
        or type(time) is not datetime
        or type(other_time) is not datetime
        or time != other_time
        or time.utcoffset() != other_time.utcoffset()
    ):
        return False
    try:
        written = marshal.dumps(_PLAIN_VALUES(mine), _NO_REFERENCES)
        if written != marshal.dumps(_PLAIN_VALUES(theirs), _NO_REFERENCES):
            return False
    except ValueError:  # a value marshal cannot write
        return False
    return _MAYBE_SURROGATE.search(written) is None


_MAYBE_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
"""A surrogate as marshal writes it (UTF-8, surrogates passed): no text holds one, and the texts' digests
refuse it (``text_digest`` raises), so such a fact is left to them. A number's bytes may look alike too:
that fact is compared by its texts, as every fact was."""


def _content_json(envelope: Envelope) -> str | None:
    try:
        return json_text_of(envelope, exclude=_TRACE_FIELDS)
    except PydanticSerializationError:  # a lone surrogate: the digest tells
        return None


def recorded(entry: LogEntry | StoredEntry | None, envelope: Envelope) -> bool:
    """Whether ``entry`` recorded publishing exactly ``envelope`` (same id, same content).

    An entry as stored is first asked whether its last output has the envelope's content text (the
    published one, less its trace context: ~120 k instructions fewer than validating the entry and
    comparing values); any other answer reads it whole."""
    if isinstance(entry, StoredEntry):
        content = _content_json(envelope)
        if content is not None and entry.last_output_is(content):
            return True
        entry = entry.entry
    if entry is None:
        return False
    return any(out.id == envelope.id and same_fact(out, envelope) for out in entry.outputs)


def require_recorded(snapshot: Snapshot, envelope: Envelope, producers: Sequence[tuple[str, str]]) -> None:
    """The fact must be among what one of its possible producers recorded publishing (rule 8)."""
    if any(recorded(snapshot.proof(stage, input_id), envelope) for stage, input_id in producers):
        return
    stages = " or ".join(sorted({stage for stage, _ in producers}))
    raise NotRecorded(f"{stages} recorded no {envelope.type} {envelope.id} like this one", field="detail")


def publish(
    deps: StageDeps,
    outcome: Outcome,
    envelope: Envelope,
    outputs: Sequence[Envelope],
    reason: str | None = None,
) -> StageResult:
    if outputs:
        deps.bus.publish(outputs)
    return StageResult(outcome=outcome, envelope=envelope, published=tuple(outputs), reason=reason)


class ConcurrentUpdate(IntentbusError):
    """The run kept changing under this stage; SQS redelivers and the stage reads it again."""

    code: ClassVar[str] = "concurrent_update"


COMMIT_ATTEMPTS = 3

_Answer = TypeVar("_Answer")


def retry_on_conflict(
    attempt: Callable[[], _Answer | None],
    *,
    exhausted: Callable[[], _Answer] | str,
) -> _Answer:
    """Read, commit conditionally, and read again on a version conflict, at most ``COMMIT_ATTEMPTS`` times.

    ``attempt`` reads the state and tries its conditional write: ``None`` means the version moved
    under it. Past the last attempt, ``exhausted`` decides: a text is raised as ``ConcurrentUpdate``
    (SQS, or the caller, tries again later), a callable gives the answer."""
    for _ in range(COMMIT_ATTEMPTS):
        answer = attempt()
        if answer is not None:
            return answer
    if callable(exhausted):
        return exhausted()
    raise ConcurrentUpdate(exhausted)


def commit_then_publish(
    deps: StageDeps, store: WorkflowStore, commit: Commit, envelope: Envelope
) -> StageResult | None:
    """Record, then publish (rule 1). ``None`` on a version conflict: the caller reads again."""
    result = store.commit(commit)
    if result.status is CommitStatus.VERSION_CONFLICT:
        return None
    if result.status is CommitStatus.ALREADY_RECORDED:
        assert result.entry is not None
        return publish(deps, Outcome.DUPLICATE, envelope, result.entry.outputs)
    return publish(
        deps, commit.entry.outcome, envelope, commit.entry.outputs, commit.entry.summary.get("reason")
    )


def log_only(entry: LogEntry, tenant_id: str, run_id: str) -> Commit:
    """A commit that changes no state: stale inputs are recorded, never applied."""
    return Commit(entry=entry, tenant_id=tenant_id, run_id=run_id, expected_version=None)
