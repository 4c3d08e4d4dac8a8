"""Execute's persistence layers hash a command once, to exactly what Powertools' own layer stores for it.

The record's key and payload hash are read from the command's fields rather than by Powertools' JMESPath
search, once per command (``CommandData``): the stored key and hash must stay byte for byte the same, or
a deploy would run every command in flight again (a new key) or refuse it (another payload's hash)."""

from __future__ import annotations

import copy
import json
from datetime import date
from decimal import Decimal
from typing import Any
from unittest import mock
from uuid import UUID

import pytest
import redis
from aws_lambda_powertools.shared.json_encoder import Encoder
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyKeyError
from botocore.session import get_session
from hypothesis import given
from hypothesis import strategies as st

from intentbus.adapters.base85 import ALPHABET
from intentbus.adapters.dynamodb_guard import DynamoExecutionGuard
from intentbus.adapters.idempotency import (
    KEY_PREFIX,
    CommandData,
    CommandHashes,
    GuardedPersistenceLayer,
    LapseWatchingClient,
    PackedRecord,
    PowertoolsIdempotentRunner,
    _packed,
    _packed_bytes,
    completed_record,
    response_text,
)
from intentbus.adapters.powertools_idempotency import BasePersistenceLayer, DynamoDBPersistenceLayer
from intentbus.adapters.redis_idempotency import LeasedCachePersistenceLayer
from tests.command_envelopes import command_envelope
from tests.fuzz.support import json_values

TABLE = "idempotency"


def _client() -> Any:
    return get_session().create_client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )


def _powertools_layer() -> BasePersistenceLayer:
    """Powertools' own DynamoDB layer, configured as the runner configures its layer."""
    runner = PowertoolsIdempotentRunner(TABLE, _client(), retention_seconds=60)
    layer = DynamoDBPersistenceLayer(table_name=TABLE, boto3_client=_client())
    layer.configure(runner.config, key_prefix=KEY_PREFIX)
    return layer


def _guarded_layer() -> GuardedPersistenceLayer:
    client = _client()
    guard = DynamoExecutionGuard("workflow", client)
    layer = GuardedPersistenceLayer(TABLE, LapseWatchingClient(client), guard)
    PowertoolsIdempotentRunner.over(layer, LapseWatchingClient(client), retention_seconds=60)
    return layer


def _redis_layer() -> LeasedCachePersistenceLayer:
    layer = LeasedCachePersistenceLayer(redis.Redis(host="127.0.0.1", port=1))  # never connected here
    PowertoolsIdempotentRunner.over(layer, layer, retention_seconds=60)
    return layer


POWERTOOLS = _powertools_layer()
OURS: list[CommandHashes] = [_guarded_layer(), _redis_layer()]

texts = st.text(min_size=1, max_size=20)


@given(
    key=texts,
    tenant=st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_\-]{0,20}\Z"),
    payload=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
)
def test_a_commands_key_and_payload_hash_are_powertools_own(key: str, tenant: str, payload: Any) -> None:
    dumped = command_envelope(key, tenant_id=tenant, payload=payload).to_json_dict()
    expected_key = POWERTOOLS._get_hashed_idempotency_key(dumped)
    expected_hash = POWERTOOLS._get_hashed_payload(dumped)
    for layer in OURS:
        data = CommandData(dumped)
        assert layer._get_hashed_idempotency_key(data) == expected_key
        assert layer._get_hashed_payload(data) == expected_hash
        assert layer._get_hashed_idempotency_key(dict(dumped)) == expected_key  # plain data: Powertools'


@pytest.mark.parametrize("layer", OURS, ids=["dynamodb", "redis"])
def test_a_command_without_a_key_is_refused_as_powertools_refuses_it(layer: CommandHashes) -> None:
    dumped = {**command_envelope("k").to_json_dict(), "idempotency_key": None, "tenant_id": None}
    with pytest.raises(IdempotencyKeyError):
        POWERTOOLS._get_hashed_idempotency_key(dumped)
    with pytest.raises(IdempotencyKeyError):
        layer._get_hashed_idempotency_key(CommandData(dumped))


@pytest.mark.parametrize("layer", OURS, ids=["dynamodb", "redis"])
def test_each_hash_is_computed_once_per_command(
    layer: CommandHashes, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed: list[Any] = []
    generate = layer._generate_hash

    def counting(data: Any) -> str:
        hashed.append(data)
        return generate(data)

    monkeypatch.setattr(layer, "_generate_hash", counting)
    data = CommandData(command_envelope("k1").to_json_dict())
    for _ in range(2):  # the in-progress put, then the save
        layer._get_hashed_idempotency_key(data)
        layer._get_hashed_payload(data)
    assert hashed == [["acme", "k1"], {"invoice": "inv-1"}]
    layer._get_hashed_payload(CommandData(command_envelope("k2").to_json_dict()))
    assert len(hashed) == 4  # another command: hashed anew


def test_powertools_does_not_copy_a_commands_data() -> None:
    data = CommandData(command_envelope("k1").to_json_dict())
    assert copy.deepcopy(data) is data
    assert copy.deepcopy({"command": data})["command"] is data


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "café ✓",
        ["acme", "k1"],
        {"b": [1, 2.5, -0.0, 1e-7, 10**20, None, True], "a": {"z": "", "y": "\u2028"}},
        {"amount": Decimal("12.30"), "when": date(2026, 12, 6), "id": UUID(int=7)},
    ],
)
@pytest.mark.parametrize("layer", OURS, ids=["dynamodb", "redis"])
def test_a_value_is_hashed_as_powertools_hashes_it(layer: CommandHashes, value: Any) -> None:
    """The encoder made once writes the text ``json.dumps`` writes for Powertools, so the same hash."""
    assert layer._generate_hash(value) == BasePersistenceLayer._generate_hash(POWERTOOLS, value)


@pytest.mark.parametrize("layer", OURS, ids=["dynamodb", "redis"])
def test_a_result_stored_without_a_lock_is_the_text_powertools_saves(layer: CommandHashes) -> None:
    """A read-only command's completed record holds its result as Powertools' save writes it."""
    data = CommandData(command_envelope("k1").to_json_dict())
    for result in (_packed(command_envelope("k2").to_json_dict()), {"b": [1, 2.5, None], "a": "café ✓"}):
        record = completed_record(layer, data, result)
        assert record.response_data == json.dumps(result, cls=Encoder, sort_keys=True)
        assert record.payload_hash == POWERTOOLS._get_hashed_payload(dict(data))


@given(st.binary(max_size=3_000))
def test_a_packed_results_text_is_the_one_powertools_writes(raw: bytes) -> None:
    """A record packed as bytes, where text is stored (Redis): its text, written directly (base85 needs no
    escape), is byte for byte Powertools' ``json.dumps`` of the text form, as stored before."""
    data = CommandData(command_envelope("k1").to_json_dict())
    result = {"raw": raw.hex()}
    for layer in OURS:
        record = completed_record(layer, data, _packed_bytes(result))
        assert isinstance(record, PackedRecord)
        assert record.packed == _packed_bytes(result)["intentbus_z"]
        assert record.response_data == json.dumps(_packed(result), cls=Encoder, sort_keys=True)
        assert response_text(_packed(result)) == record.response_data


def test_base85_needs_no_escape_in_json() -> None:
    """What lets a packed result's JSON be written directly: every base85 character stands for itself."""
    text = ALPHABET.decode()
    assert json.dumps(text) == f'"{text}"'


@given(st.dictionaries(st.sampled_from(["intentbus_z", "other"]), st.one_of(st.text(), json_values)))
def test_any_other_results_text_is_the_one_powertools_writes(result: dict[str, Any]) -> None:
    """A result not packed here, even one that looks packed, goes to the encoder."""
    assert response_text(result) == json.dumps(result, cls=Encoder, sort_keys=True)


@pytest.mark.parametrize("layer", OURS, ids=["dynamodb", "redis"])
def test_a_saved_result_is_the_record_powertools_saves(layer: CommandHashes) -> None:
    """The locked path's save (``save_success``) updates the very record Powertools' own save builds."""
    data = CommandData(command_envelope("k1").to_json_dict())
    for result in (_packed(command_envelope("k2").to_json_dict()), {"b": [1, 2.5, None], "a": "café ✓"}):
        ours, theirs = mock.Mock(), mock.Mock()
        with mock.patch.object(layer, "_get_expiry_timestamp", return_value=1_800_000_000):
            with mock.patch.object(layer, "_update_record", ours):
                layer.save_success(data, result)
            with mock.patch.object(layer, "_update_record", theirs):
                BasePersistenceLayer.save_success(layer, data, result)
        (saved,), (expected,) = (call.kwargs.values() for call in (ours.call_args, theirs.call_args))
        assert vars(saved) == vars(expected)
        assert saved.response_data == json.dumps(result, cls=Encoder, sort_keys=True)


def test_a_records_expiry_is_powertools_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Now plus the retention in whole seconds, as Powertools' own layer computes it from a local datetime:
    the same second read between the same two clock readings (the local cloud's offset aside)."""
    monkeypatch.delenv("INTENTBUS_CLOCK_OFFSET_SECONDS", raising=False)
    for layer in OURS:
        assert layer.expires_after_seconds == POWERTOOLS.expires_after_seconds == 60
        for _ in range(50):
            before = POWERTOOLS._get_expiry_timestamp()
            ours = layer._get_expiry_timestamp()
            after = POWERTOOLS._get_expiry_timestamp()
            assert isinstance(ours, int)
            assert before <= ours <= after


_STORED_ITEMS = [
    {  # completed, its result stored as text (before results were bytes), its payload hash kept
        "id": {"S": "intentbus-execute#abc"},
        "status": {"S": "COMPLETED"},
        "expiration": {"N": "1799999999"},
        "data": {"S": '{"intentbus_z": "c-o~"}'},
        "validation": {"S": "f00d"},
    },
    {  # in progress: no result yet, its lease's expiry in milliseconds
        "id": {"S": "intentbus-execute#def"},
        "status": {"S": "INPROGRESS"},
        "expiration": {"N": "1799999999"},
        "in_progress_expiration": {"N": "1799999999123"},
        "validation": {"S": "beef"},
    },
]


@pytest.mark.parametrize("item", _STORED_ITEMS)
def test_a_stored_record_is_read_by_hand_as_powertools_reads_it(item: dict[str, Any]) -> None:
    powertools = _powertools_layer()
    assert isinstance(powertools, DynamoDBPersistenceLayer)
    ours, theirs = _guarded_layer()._item_to_data_record(item), powertools._item_to_data_record(item)

    assert type(ours) is type(theirs)
    for field in ("idempotency_key", "status", "expiry_timestamp", "in_progress_expiry_timestamp"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert (ours.response_data, ours.payload_hash) == (theirs.response_data, theirs.payload_hash)


def test_a_result_stored_as_bytes_is_read_as_a_packed_record_with_the_same_fields() -> None:
    packed = _packed_bytes({"ran": "first"})["intentbus_z"]
    item = {**_STORED_ITEMS[0], "data": {"B": packed}}

    ours = _guarded_layer()._item_to_data_record(item)
    powertools = _powertools_layer()
    assert isinstance(powertools, DynamoDBPersistenceLayer)
    theirs = powertools._item_to_data_record(_STORED_ITEMS[0])

    assert isinstance(ours, PackedRecord)
    assert ours.packed == packed
    for field in (
        "idempotency_key",
        "status",
        "expiry_timestamp",
        "in_progress_expiry_timestamp",
        "payload_hash",
    ):
        assert getattr(ours, field) == getattr(theirs, field), field
