"""Exactly-once execution on Powertools' Idempotency utility (its own DynamoDB table, keyed by ``id``).

Powertools re-runs a function whose in-progress record lapsed, saying nothing of the earlier
attempt. The client it is given here asks DynamoDB for the replaced item (``ReturnValues=ALL_OLD``,
no extra call), so a tool that is unsafe to repeat is reconciled instead of run blindly again.

With the execution guard at hand (``GuardedPersistenceLayer``), the guard reads the run and the
authorization first; the in-progress record is then put on its own, or with the resource's move in one
TransactWriteItems when the command names a resource.

A command whose tool only reads and names no resource takes no lock at all
(``PowertoolsIdempotentRunner.run_read_only``): its claim is checked, the tool runs, and one conditional
put stores the completed record Powertools would have saved (same key, payload hash and packed result),
so either path reads the other's records. The layer makes that put (``StoresCompleted``), here and on
Redis (``redis_idempotency``); the runner alone decides what its answer means.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import time
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from aws_lambda_powertools.shared.json_encoder import Encoder
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from pydantic_core import PydanticSerializationError, to_json

from intentbus.adapters.clock import clock_offset
from intentbus.adapters.compression import compressed
from intentbus.adapters.powertools_idempotency import (  # Powertools' utility without boto3 (cold start)
    BasePersistenceLayer,
    DataRecord,
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    IdempotencyItemAlreadyExistsError,
    IdempotencyValidationError,
    idempotent_function,
)
from intentbus.envelope import Envelope
from intentbus.errors import IntentbusError, NotRecorded
from intentbus.execution_claim import Claim, ClaimRequest, ClaimStatus, MadeOutput
from intentbus.ids import encoder_made_once
from intentbus.ports import KeyHeldByAnotherCommand, OutcomeInDoubt

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard

# Stable across function renames, so a renamed function does not run a command again.
KEY_PREFIX = "intentbus.execute"
IN_PROGRESS = "INPROGRESS"
COMPLETED = "COMPLETED"
REFUSED = "refused"
"""Set on an in-progress record whose attempt was refused (ran nothing): its lapse is no unknown effect."""


class LapseWatchingClient:
    """The DynamoDB client Powertools writes through; notes when an in-progress put replaced a lapsed one.

    Where the local cloud's virtual clock runs, the put's notion of "now" follows it, so a lease
    lapses in virtual time as it would on AWS.
    """

    def __init__(self, client: DynamoDBClient) -> None:
        self._client = client
        self.replaced_lapsed = False
        self._last_put: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    @property
    def unwatched(self) -> DynamoDBClient:
        return self._client

    def put_item(self, **kwargs: Any) -> Any:
        if kwargs.get("Item", {}).get("status", {}).get("S") != IN_PROGRESS:
            return self._client.put_item(**kwargs)
        offset = clock_offset()
        values = dict(kwargs.get("ExpressionAttributeValues", {}))
        item = dict(kwargs.get("Item", {}))
        if offset:
            _shift(values, ":now", offset)
            _shift(values, ":now_in_millis", offset * 1000)
            _shift(item, "expiration", offset)
            _shift(item, "in_progress_expiration", offset * 1000)
        response = self._client.put_item(
            **{**kwargs, "Item": item, "ExpressionAttributeValues": values, "ReturnValues": "ALL_OLD"}
        )
        old = response.get("Attributes", {})
        self.replaced_lapsed = old.get("status", {}).get("S") == IN_PROGRESS and REFUSED not in old
        self._last_put = {"TableName": kwargs["TableName"], "Key": {"id": item["id"]}}
        return response

    def begin(self) -> None:
        """Before each command: nothing replaced yet, and a refusal marks only its own attempt's record."""
        self.replaced_lapsed = False
        self._last_put = None

    def note_refused(self) -> None:
        """Marks the record of the last in-progress put as a refused attempt's, before it is released.

        Should the release fail, the record lapses; the next attempt then knows nothing ran under it.
        Unmarked (this write failed too), the lapse is taken as an unknown effect: checked, never rerun."""
        if self._last_put is None:
            return
        with contextlib.suppress(ClientError, BotoCoreError):
            self._client.update_item(
                **self._last_put,
                UpdateExpression="SET #refused = :yes",
                ConditionExpression="#status = :inprogress",
                ExpressionAttributeNames={"#refused": REFUSED, "#status": "status"},
                ExpressionAttributeValues={":yes": {"BOOL": True}, ":inprogress": {"S": IN_PROGRESS}},
            )

    def update_item(self, **kwargs: Any) -> Any:
        """Powertools' save of the result: its expiry, too, in the clock the condition uses."""
        offset = clock_offset()
        if offset and ":expiry" in kwargs.get("ExpressionAttributeValues", {}):
            values = dict(kwargs["ExpressionAttributeValues"])
            _shift(values, ":expiry", offset)
            kwargs = {**kwargs, "ExpressionAttributeValues": values}
        return self._client.update_item(**kwargs)


EVENT_KEY_PATH = "[tenant_id, idempotency_key]"
"""The record's key: the command's tenant and idempotency key (namespaced by tenant: no tenant can claim,
or pre-claim, another tenant's key)."""
PAYLOAD_PATH = "payload"
"""What the record's payload hash covers: the command's payload."""


class CommandData(dict[str, Any]):
    """A command's JSON form as the runner hands it to Powertools: made once per command, never changed.

    Powertools deep-copies the data it is given on every call (~40 µs for a command); this one is its own
    copy (``__deepcopy__``). Its hashes are computed once (``CommandHashes``)."""

    __slots__ = ("hashes",)

    def __init__(self, dumped: dict[str, Any]) -> None:
        super().__init__(dumped)
        self.hashes: tuple[BasePersistenceLayer, str, str | None, str] | None = None
        """The layer and its key prefix, and the key and payload hashes it computed for them."""

    def __deepcopy__(self, memo: dict[int, Any]) -> CommandData:
        return self


class CommandHashes(BasePersistenceLayer):
    """A persistence layer that reads a command's key and payload hash once per command (``CommandData``).

    Powertools computes both for each write (the in-progress put, the save, a read back), by a JMESPath
    search each time; with the runner's configuration (``EVENT_KEY_PATH``, ``PAYLOAD_PATH``) the values
    searched for are read from the command's fields directly, then hashed as Powertools hashes them. Any
    other data or configuration is left to Powertools."""

    def _get_hashed_idempotency_key(self, data: dict[str, Any]) -> str | None:
        hashes = self._command_hashes(data)
        return super()._get_hashed_idempotency_key(data) if hashes is None else hashes[2]

    def _get_hashed_payload(self, data: dict[str, Any]) -> str:
        hashes = self._command_hashes(data)
        return super()._get_hashed_payload(data) if hashes is None else hashes[3]

    def save_success(self, data: dict[str, Any], result: dict[str, Any]) -> None:
        """Powertools' save of a result: the record it builds (``completed_record``), its result's JSON
        written by ``response_text``, updated and cached as Powertools' own save does."""
        if self._get_hashed_idempotency_key(data) is None:
            return  # no key: Powertools saves nothing
        record = completed_record(self, data, result)
        self._update_record(data_record=record)
        self._save_to_cache(data_record=record)

    def _get_expiry_timestamp(self) -> int:
        """Powertools' expiry: now plus the retention, in whole seconds, from ``time.time()`` rather than
        a naive local datetime's ``timestamp()`` (its conversion from local time: ~9 k instructions more,
        once or twice a command)."""
        return int(time.time() + self.expires_after_seconds)

    def _generate_hash(self, data: Any) -> str:
        """Powertools' own hash of ``data``: the same JSON text, from an encoder made once."""
        return str(self.hash_function(_key_json()(data).encode()).hexdigest())

    def _command_hashes(
        self, data: dict[str, Any]
    ) -> tuple[BasePersistenceLayer, str, str | None, str] | None:
        if not isinstance(data, CommandData) or self.event_key_jmespath != EVENT_KEY_PATH:
            return None
        validation = self.validation_key_jmespath
        if validation is None or getattr(validation, "expression", None) != PAYLOAD_PATH:
            return None
        if data.hashes is None or data.hashes[0] is not self or data.hashes[1] != self.function_name:
            selected = [data.get("tenant_id"), data.get("idempotency_key")]
            key = (
                f"{self.function_name}#{self._generate_hash(selected)}"
                if not self.is_missing_idempotency_key(selected)
                else super()._get_hashed_idempotency_key(data)  # raises, or warns and is None
            )
            data.hashes = (self, self.function_name, key, self._generate_hash(data.get(PAYLOAD_PATH)))
        return data.hashes


@functools.cache
def _key_json() -> Callable[[Any], str]:
    """Powertools' key encoder (what it hashes), made once."""
    from aws_lambda_powertools.utilities.idempotency.persistence import base

    return _sorted_json_encoder(base._IdempotencyKeyEncoder)


@functools.cache
def _response_json() -> Callable[[Any], str]:
    """``json.dumps(result, cls=Encoder, sort_keys=True)``, as Powertools' save writes a result, made once."""
    return _sorted_json_encoder(Encoder)


def _sorted_json_encoder(encoder_class: type[json.JSONEncoder]) -> Callable[[Any], str]:
    """``json.dumps(value, cls=encoder_class, sort_keys=True)``, as Powertools writes what it hashes (its key
    encoder) and what it stores (``Encoder``), its encoder made once (no command's JSON holds itself)."""
    return encoder_made_once(encoder_class(sort_keys=True))


class GuardedPersistenceLayer(CommandHashes, DynamoDBPersistenceLayer):
    """Powertools' DynamoDB layer whose in-progress put carries the execution guard's claim.

    The put's condition is narrowed to a key that is new or whose result expired: a record in
    progress, lapsed or not, fails the put (or cancels the transaction) and comes back with it
    (``ALL_OLD``), so a lapsed one is still noticed — then replaced by Powertools' own put, and
    claimed by the guard on its own after. When the guard's read refuses, the in-progress record is
    put on its own, as without the guard, and the refusal is left in the request for the stage.
    """

    def __init__(self, table_name: str, client: LapseWatchingClient, guard: DynamoExecutionGuard) -> None:
        super().__init__(table_name=table_name, boto3_client=client)  # type: ignore[arg-type]
        self._guard = guard
        self._unwatched = client.unwatched
        self.claim: ClaimRequest | None = None
        """The claim to fold into the next in-progress put (set per command by the runner)."""

    def _put_record(self, data_record: DataRecord) -> None:
        request, self.claim = self.claim, None
        if request is None or data_record.status != IN_PROGRESS:
            return super()._put_record(data_record)
        prepared = self._guard.actions(request)
        if prepared.refused is not None:
            request.made = prepared.refused
            return super()._put_record(data_record)
        offset = clock_offset()
        now = time.time() + offset
        put = self._put_unless_held(data_record, now, offset)
        try:
            if prepared.actions:
                actions: list[Any] = [{"Put": put}, *prepared.actions]
                self.client.transact_write_items(TransactItems=actions)
            else:
                self._unwatched.put_item(**put)  # its item is already on the clock the guard uses
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code not in ("TransactionCanceledException", "ConditionalCheckFailedException"):
                raise
            response: dict[str, Any] = dict(error.response)
            reasons: list[dict[str, Any]] = response.get("CancellationReasons", [])
            held: dict[str, Any] = (
                reasons[0] if reasons else {"Code": "ConditionalCheckFailed", "Item": response.get("Item")}
            )
            if held.get("Code") == "ConditionalCheckFailed" and held.get("Item"):
                if not _lapsed(held["Item"], now):
                    self._already_exists(data_record, held["Item"])
                return super()._put_record(data_record)  # replaces the lapsed record, noticed
            refused = prepared.refusal(reasons[1:])
            if refused is None:
                raise  # cancelled for another reason (a concurrent transaction): retried by SQS
            request.made = refused
            return super()._put_record(data_record)
        request.made = Claim(ClaimStatus.CLAIMED)
        return None

    def put_completed(self, data: dict[str, Any], result: dict[str, Any]) -> DataRecord | None:
        """As ``StoresCompleted.put_completed``: one conditional PutItem, whose failure returns the item."""
        record = completed_record(self, data, result)
        offset = clock_offset()
        try:
            self._unwatched.put_item(**self._put_unless_held(record, time.time() + offset, offset))
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            response: dict[str, Any] = dict(error.response)
            item: dict[str, Any] | None = response.get("Item")
            if item is None:
                raise
            held = self._item_to_data_record(item)
            self._validate_payload(data_payload=record, stored_data_record=held)
            return held
        return None

    def _put_unless_held(self, record: DataRecord, now: float, offset: float) -> dict[str, Any]:
        """The record's PutItem, taking a key that is new or whose result expired (see the class);
        ``now`` and the record's expiries on the clock ``offset`` moves (``clock_offset``)."""
        item: dict[str, Any] = {
            **self._get_key(record.idempotency_key),
            self.expiry_attr: {"N": str(int((record.expiry_timestamp or 0) + offset))},
            self.status_attr: {"S": record.status},
        }
        if record.in_progress_expiry_timestamp is not None:
            expiry_ms = int(record.in_progress_expiry_timestamp + offset * 1000)
            item[self.in_progress_expiry_attr] = {"N": str(expiry_ms)}
        if isinstance(record, PackedRecord):
            item[self.data_attr] = {"B": record.packed}
        elif record.response_data:
            item[self.data_attr] = {"S": record.response_data}
        if self.payload_validation_enabled and record.payload_hash:
            item[self.validation_key_attr] = {"S": record.payload_hash}
        return {
            "TableName": self.table_name,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#id) OR (#expiry < :now AND #status <> :inprogress)",
            "ExpressionAttributeNames": {
                "#id": self.key_attr,
                "#expiry": self.expiry_attr,
                "#status": self.status_attr,
            },
            "ExpressionAttributeValues": {":now": {"N": str(int(now))}, ":inprogress": {"S": IN_PROGRESS}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _update_record(self, data_record: DataRecord) -> None:
        """Powertools' save of a result; a packed one as its bytes (a binary attribute)."""
        if not isinstance(data_record, PackedRecord):
            super()._update_record(data_record)
            return
        names = {"#response_data": self.data_attr, "#expiry": self.expiry_attr, "#status": self.status_attr}
        values: dict[str, Any] = {
            ":response_data": {"B": data_record.packed},
            ":expiry": {"N": str(data_record.expiry_timestamp)},
            ":status": {"S": data_record.status},
        }
        update = "SET #response_data = :response_data, #expiry = :expiry, #status = :status"
        if self.payload_validation_enabled:
            update += ", #validation_key = :validation_key"
            names["#validation_key"] = self.validation_key_attr
            values[":validation_key"] = {"S": data_record.payload_hash}
        self.client.update_item(
            TableName=self.table_name,
            Key=self._get_key(data_record.idempotency_key),
            UpdateExpression=update,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def _item_to_data_record(self, item: dict[str, Any]) -> DataRecord:
        """Powertools' reading of a stored record, read by hand (its own makes boto3's deserializer for
        it): a result stored as bytes (a binary attribute) makes a ``PackedRecord``, one stored as text
        (before results were bytes) Powertools' ``DataRecord``, with the same fields either way."""
        key = item[self.key_attr]["S"]
        status = item[self.status_attr]["S"]
        expiry = _stored_number(item.get(self.expiry_attr))
        in_progress = _stored_number(item.get(self.in_progress_expiry_attr))
        payload_hash = item.get(self.validation_key_attr, {}).get("S", "")
        stored = item.get(self.data_attr, {})
        if "B" in stored:
            return PackedRecord(
                key,
                status,
                expiry,
                payload_hash,
                stored["B"],
                in_progress_expiry_timestamp=in_progress,
            )
        return DataRecord(
            idempotency_key=key,
            status=status,
            expiry_timestamp=expiry,
            in_progress_expiry_timestamp=in_progress,
            response_data=stored.get("S"),
            payload_hash=payload_hash,
        )

    def _already_exists(self, record: DataRecord, item: dict[str, Any]) -> None:
        """As Powertools' own put does when the key is held: check the payload, hand over the record."""
        held = self._item_to_data_record(item)
        self._validate_payload(data_payload=record, stored_data_record=held)
        raise IdempotencyItemAlreadyExistsError(old_data_record=held)


@runtime_checkable
class StoresCompleted(Protocol):
    """A persistence layer that stores a completed record with no in-progress record before it."""

    def put_completed(self, data: dict[str, Any], result: dict[str, Any]) -> DataRecord | None:
        """Stores ``result`` as the completed record of ``data``'s key, in one atomic write, if the key is
        new or its result expired: ``None`` then. Else nothing is written and the record holding the key
        (completed within its retention, or in progress, live or lapsed) is returned, once its payload
        hash is found to be ``data``'s (``IdempotencyValidationError`` if it is not: another command's
        key)."""
        ...


def completed_record(layer: BasePersistenceLayer, data: dict[str, Any], result: dict[str, Any]) -> DataRecord:
    """The completed record Powertools would save for ``data`` after its function returned ``result``; a
    result packed as bytes (``_packed_bytes``) makes a ``PackedRecord``, whose text is ``_packed``'s."""
    key = layer._get_hashed_idempotency_key(data)
    assert key is not None  # raise_on_no_idempotency_key: Powertools raised for a command without one
    packed = result.get(PACKED) if len(result) == 1 else None
    if isinstance(packed, bytes):
        return PackedRecord(
            key, COMPLETED, layer._get_expiry_timestamp(), layer._get_hashed_payload(data), packed
        )
    return DataRecord(
        idempotency_key=key,
        status=COMPLETED,
        expiry_timestamp=layer._get_expiry_timestamp(),
        response_data=response_text(result),
        payload_hash=layer._get_hashed_payload(data),
    )


def response_text(result: dict[str, Any]) -> str:
    """``json.dumps(result, cls=Encoder, sort_keys=True)``, the text Powertools' save stores."""
    return _response_json()(result)


class PackedRecord(DataRecord):
    """A completed record whose result is its packed bytes (``_packed_bytes``): stored as they are where the
    store holds bytes (a DynamoDB binary attribute), else as ``_packed``'s text (``response_data``, made
    only when asked for: on DynamoDB never, as base85 costs ~150 k instructions a result)."""

    def __init__(
        self,
        idempotency_key: str,
        status: str,
        expiry_timestamp: int | None,
        payload_hash: str,
        packed: bytes,
        *,
        in_progress_expiry_timestamp: int | None = None,
    ) -> None:
        super().__init__(
            idempotency_key=idempotency_key,
            status=status,
            expiry_timestamp=expiry_timestamp,
            in_progress_expiry_timestamp=in_progress_expiry_timestamp,
            payload_hash=payload_hash,
        )
        self.packed = packed
        self._text: str | None = None

    @property
    def response_data(self) -> str:
        """``json.dumps(_packed(result), cls=Encoder, sort_keys=True)``, written directly: base85's
        alphabet holds no quote, backslash or control character, so JSON holds it as it is."""
        if self._text is None:
            from intentbus.adapters.base85 import b85_text  # a text store's only (Redis)

            self._text = f'{{"{PACKED}": "{b85_text(self.packed)}"}}'
        return self._text

    @response_data.setter
    def response_data(self, text: str) -> None:
        """Powertools' ``__init__`` sets it empty: the text is the bytes' (a non-empty one is kept)."""
        self._text = text or None

    def response_json_as_dict(self) -> dict[str, Any]:
        """The result as ``_unpacked`` reads it, without base85 either way."""
        return {PACKED: self.packed}


def _stored_number(value: dict[str, Any] | None) -> int | None:
    """A stored number attribute (an expiry, whole seconds or milliseconds), or ``None`` if absent."""
    return None if value is None else int(value["N"])


def _lapsed(item: dict[str, Any], now: float) -> bool:
    """An in-progress record whose lease (or whole record) has expired: its attempt died mid-way."""
    if item.get("status", {}).get("S") != IN_PROGRESS:
        return False
    lease_ms = item.get("in_progress_expiration", {}).get("N")
    return int(item["expiration"]["N"]) < now or (lease_ms is not None and int(lease_ms) < now * 1000)


def _shift(values: dict[str, Any], name: str, seconds: float) -> None:
    """Every time Powertools writes or compares is real time; moved, all of them are virtual time."""
    if name in values:
        values[name] = {"N": str(int(float(values[name]["N"]) + seconds))}


class _LeaseContext:  # a plain class: a dataclass's generated __init__ is compiled at every cold start
    """The Lambda context with the in-progress lease capped: the lease follows the remaining time."""

    def __init__(self, context: LambdaContext, lease_seconds: float | None) -> None:
        self.context = context
        self.lease_seconds = lease_seconds

    def get_remaining_time_in_millis(self) -> int:
        remaining = self.context.get_remaining_time_in_millis()
        if self.lease_seconds is None:
            return remaining
        return min(remaining, int(self.lease_seconds * 1000))


class LapseWatch(Protocol):
    """Says whether the last in-progress put replaced a lapsed record."""

    replaced_lapsed: bool

    def begin(self) -> None:
        """A new command's attempt starts: what the last one saw is forgotten."""

    def note_refused(self) -> None:
        """The attempt under the last in-progress put was refused and ran nothing."""


class PowertoolsIdempotentRunner:
    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient,
        *,
        retention_seconds: int,
        lease_seconds: float | None = None,
        guard: DynamoExecutionGuard | None = None,
    ) -> None:
        """On DynamoDB. ``guard``: fold each command's claim into the in-progress put
        (``GuardedPersistenceLayer``)."""
        watching = LapseWatchingClient(client)
        persistence: BasePersistenceLayer
        if guard is None:
            persistence = DynamoDBPersistenceLayer(table_name=table_name, boto3_client=watching)  # type: ignore[arg-type]
        else:
            persistence = GuardedPersistenceLayer(table_name, watching, guard)
        self._setup(persistence, watching, retention_seconds, lease_seconds)

    @classmethod
    def over(
        cls,
        persistence: BasePersistenceLayer,
        watch: LapseWatch,
        *,
        retention_seconds: int,
        lease_seconds: float | None = None,
    ) -> PowertoolsIdempotentRunner:
        """On another persistence layer (e.g. ``redis_idempotency.LeasedCachePersistenceLayer``)."""
        runner = cls.__new__(cls)
        runner._setup(persistence, watch, retention_seconds, lease_seconds)
        return runner

    def _setup(
        self,
        persistence: BasePersistenceLayer,
        watch: LapseWatch,
        retention_seconds: int,
        lease_seconds: float | None,
    ) -> None:
        self.config = IdempotencyConfig(
            event_key_jmespath=EVENT_KEY_PATH,
            payload_validation_jmespath=PAYLOAD_PATH,
            raise_on_no_idempotency_key=True,
            expires_after_seconds=retention_seconds,
        )
        self._lease_seconds = lease_seconds
        self._watch = watch
        self._guarded = persistence if isinstance(persistence, GuardedPersistenceLayer) else None
        self._unlocked = persistence if isinstance(persistence, StoresCompleted) else None
        # Ours build the completed record (``completed_record``) and take the packed bytes; Powertools'
        # own layer writes the result's JSON itself, so it is given the text.
        self._pack = _packed_bytes if isinstance(persistence, CommandHashes) else _packed
        # As Powertools' handler does on its first call: a read-only command's own put may come first.
        persistence.configure(self.config, key_prefix=KEY_PREFIX)
        self._run = idempotent_function(
            data_keyword_argument="command",
            persistence_store=persistence,
            config=self.config,
            key_prefix=KEY_PREFIX,
        )(_call)

    def bind(self, context: LambdaContext) -> None:
        """The in-progress lock then lapses with the invocation, not when the whole record expires."""
        self.config.register_lambda_context(_LeaseContext(context, self._lease_seconds))  # type: ignore[arg-type]

    def run(
        self,
        command: Envelope,
        work: Callable[[], dict[str, Any]],
        after_lapse: Callable[[], dict[str, Any]] | None = None,
        claim: ClaimRequest | None = None,
        dumped: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        self._watch.begin()
        if self._guarded is not None:
            self._guarded.claim = claim

        ran: list[dict[str, Any]] = []

        def attempt() -> dict[str, Any]:
            try:
                result = after_lapse() if after_lapse is not None and self._watch.replaced_lapsed else work()
            except OutcomeInDoubt as doubt:
                raise _KeepInProgress(doubt) from doubt
            except NotRecorded as refusal:
                # A refused fact (a forgery with the real command's key and payload) that took over a
                # lapsed record: the lapsed attempt's effect is still unknown, so the record stays in
                # progress and the real redelivery goes to its check instead of running the tool again.
                if self._watch.replaced_lapsed:
                    raise _KeepInProgress(refusal) from refusal
                self._watch.note_refused()
                raise
            ran.append(result)
            return self._pack(result)

        try:
            stored = self._run(command=_command_data(command, dumped), work=attempt)
        except _KeepInProgress as kept:
            raise kept.error from kept.error.__cause__
        except IdempotencyValidationError as error:
            raise KeyHeldByAnotherCommand(str(error)) from error
        # What ran here is returned as it was made; only a result read back from the store is unpacked.
        return ran[-1] if ran else _unpacked(stored)

    def run_read_only(
        self,
        command: Envelope,
        work: Callable[[], dict[str, Any]],
        after_lapse: Callable[[], dict[str, Any]] | None = None,
        claim: ClaimRequest | None = None,
        dumped: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``work`` that changes nothing (``ports.RunsReadsUnlocked``), run without the in-progress record:
        two writes fewer than ``run`` (the in-progress put and the save), one conditional put instead.

        Only on a layer that can (``StoresCompleted``: DynamoDB with the guard, ``GuardedPersistenceLayer``,
        and Redis, ``redis_idempotency.LeasedCachePersistenceLayer``); on a DynamoDB layer without the
        guard it runs ``run``. ``work`` makes the guard's claim first (no claim is folded
        here): a refused fact raises ``NotRecorded`` before the tool runs and nothing is written, as the
        locked path releases its record; a claim that finds the run ended or retired returns the skip,
        which is stored as the locked path stores it. A failure writes nothing: SQS redelivers, and the
        tool, which changes nothing, runs again.

        Then the key, as the put finds it:

        - free (or its result expired): this result is stored and returned;
        - holding a completed record with this payload (an earlier delivery, or one racing this one that
          stored first): that stored result is returned and the fresh one dropped, so every delivery of
          the command publishes the same fact, byte for byte (its id is derived from the input, its time
          and result are the first delivery's), whichever ran its tool last;
        - holding another payload's record: ``KeyHeldByAnotherCommand``, nothing stored, as on ``run``;
        - in progress (an attempt on the locked path: a deployment before this one, or one whose tool's
          declaration changed), live or lapsed: the put stored nothing, and the command goes the locked
          way, with the fresh result as its work. A live lease makes Powertools raise
          ``IdempotencyAlreadyInProgressError`` (SQS redelivers once that attempt has stored its result,
          which the redelivery then returns); a lapsed one is replaced and noticed, and ``after_lapse``
          checks it as ``run`` would. Never overwritten blindly: the record in progress may be the only
          trace of a write whose outcome is unknown.
        """
        layer = self._unlocked
        if layer is None:
            return self.run(command, work, after_lapse, claim, dumped)
        data = _command_data(command, dumped)
        result = work()
        try:
            held = layer.put_completed(data, self._pack(result))
        except IdempotencyValidationError as error:
            raise KeyHeldByAnotherCommand(str(error)) from error
        if held is None:
            return result
        if held.status == COMPLETED:
            return _unpacked(held.response_json_as_dict())
        return self.run(command, lambda: result, after_lapse, claim, data)


def _command_data(command: Envelope, dumped: dict[str, Any] | None) -> CommandData:
    """The command as Powertools is given it: ``dumped`` (its ``to_json_dict``) when the caller has it."""
    if isinstance(dumped, CommandData):
        return dumped
    return CommandData(command.to_json_dict() if dumped is None else dumped)


class _KeepInProgress(BaseException):
    """Carries an ``OutcomeInDoubt`` (or a refusal after a lapse) past Powertools, which deletes the
    in-progress record on any ``Exception``: deleted, the next attempt would look fresh and run the work
    blindly again."""

    def __init__(self, error: OutcomeInDoubt | NotRecorded) -> None:
        super().__init__(str(error))
        self.error = error


PACKED = "intentbus_z"
"""The stored result's key: its JSON zlib-compressed, as bytes (``_packed_bytes``; a DynamoDB binary
attribute) or base85 text (``_packed``; Redis, and every record stored before results were bytes). The
result is the output envelope, whose field names and ids repeat; packed, the record stays under
DynamoDB's 1 KB write unit."""


class StoredResultUnreadable(IntentbusError, ValueError):
    """A stored result that does not unpack to a result (its bytes or text altered or cut short): never
    taken as the command's result; the delivery fails, and the record keeps the command from running
    again."""

    code: ClassVar[str] = "stored_result_unreadable"


def _call(command: dict[str, Any], work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    return work()


def _packed(result: dict[str, Any]) -> dict[str, Any]:
    """The result's JSON, compressed, base85: the form a store that holds only text keeps."""
    from intentbus.adapters.base85 import b85_text

    return {PACKED: b85_text(_packed_bytes(result)[PACKED])}


def _packed_bytes(result: dict[str, Any]) -> dict[str, Any]:
    """The result's JSON, compressed. pydantic-core writes the text ``json.dumps`` wrote in half its CPU,
    the same but for a float's exponent (``1e-7`` for ``1e-07``): it reads back the same."""
    return {PACKED: compressed(_plain_json(result))}


def _plain_json(result: dict[str, Any]) -> bytes:
    """The result as compact ASCII JSON. An output an attempt made (``MadeOutput``) is its envelope's JSON
    text when that is ASCII: pydantic-core writes an envelope and its ``to_json_dict`` alike, byte for byte,
    and the text is the one the fact is published with, so it is written once for both."""
    if isinstance(result, MadeOutput):
        text = result.envelope.json_text
        if text.isascii():
            return text.encode()
    try:
        return to_json(result, ensure_ascii=True)
    except PydanticSerializationError:  # a lone surrogate: escaped, as json.dumps escapes it
        return json.dumps(result, separators=(",", ":")).encode()


def _unpacked(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The result, from its packed form (bytes, or base85 text) or as stored plain (a record saved before
    results were packed). ``StoredResultUnreadable`` if the packed form does not unpack to a JSON object."""
    if stored is None:
        raise StoredResultUnreadable("the completed record holds no result")
    if set(stored) != {PACKED}:
        return stored
    packed = stored[PACKED]
    try:
        unpacker = zlib.decompressobj()
        raw = unpacker.decompress(packed if isinstance(packed, bytes) else base64.b85decode(packed))
        whole = unpacker.eof and not unpacker.unused_data  # not cut short, nothing added after its end
        result = json.loads(raw) if whole else None
    except (ValueError, TypeError, zlib.error) as error:
        raise StoredResultUnreadable(f"the stored result does not unpack: {error}") from error
    if not whole:
        raise StoredResultUnreadable("the stored result is not one whole zlib stream")
    if not isinstance(result, dict):
        raise StoredResultUnreadable(f"the stored result is a {type(result).__name__}, not a result")
    return result
