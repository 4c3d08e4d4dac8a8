"""Redis (ElastiCache) as execute's idempotency store: Powertools' cache layer, with lapses noticed.

Powertools' own in-progress put is ``SET NX``, then a read, then an overwrite of an orphan under a side
lock: nothing tells the caller that the record it overwrote was an attempt that died mid-way. Here the
put is one Lua script, atomic on the server: it takes a new or expired key, refuses a held one (a result
within its retention, or a lease still running) and hands it back, and replaces a lapsed lease while
returning the record it replaced — so a tool that is unsafe to repeat is reconciled, as on DynamoDB.

A read-only command's completed record (``put_completed``, no in-progress record before it) is one
Lua script too: it takes a new or expired key and refuses any other, a record in progress included,
lapsed or not, as DynamoDB's conditional put does.

Times in the records follow the local cloud's virtual clock (``CLOCK_OFFSET_ENV``); Redis' own expiry
(``EX``) is the retention in real time, so nothing is kept shorter than asked.
"""

from __future__ import annotations

import json
import time
import warnings
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyItemAlreadyExistsError
from aws_lambda_powertools.utilities.idempotency.persistence.cache import CachePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from intentbus.adapters.clock import clock_offset
from intentbus.adapters.idempotency import CommandHashes, completed_record

if TYPE_CHECKING:
    import redis

# KEYS[1]: the record. ARGV: the new record (JSON), its time to live (s), now (s), now (ms).
# Returns {outcome, the record found or ""}: outcome "taken" (new or expired), "replaced" (a lapsed
# lease), "held" (a result within retention, or a lease still running: nothing written).
_PUT_IN_PROGRESS = """
local found = redis.call('GET', KEYS[1])
if found then
  local ok, record = pcall(cjson.decode, found)
  if ok and type(record) == 'table' then
    local expiry = tonumber(record['expiration'])
    local live = expiry == nil or expiry >= tonumber(ARGV[3])
    if record['status'] == 'INPROGRESS' then
      local lease = tonumber(record['in_progress_expiration'])
      if live and (lease == nil or lease >= tonumber(ARGV[4])) then
        return {'held', found}
      end
      redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
      return {'replaced', found}
    end
    if live then
      return {'held', found}
    end
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return {'taken', found or ''}
"""

# KEYS[1]: the record. ARGV: the completed record (JSON), its time to live (s), now (s).
# Returns {outcome, the record found or ""}: outcome "stored" (new or expired), or "held" (a result
# within retention, or a record in progress, live or lapsed: nothing written).
_PUT_COMPLETED = """
local found = redis.call('GET', KEYS[1])
if found then
  local ok, record = pcall(cjson.decode, found)
  if ok and type(record) == 'table' then
    local expiry = tonumber(record['expiration'])
    if record['status'] == 'INPROGRESS' or expiry == nil or expiry >= tonumber(ARGV[3]) then
      return {'held', found}
    end
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return {'stored', ''}
"""


with warnings.catch_warnings():
    # Powertools 3 deprecates the class's Redis name for v4 (``CachePersistenceLayer`` is the same
    # class) and warns on every subclass.
    warnings.simplefilter("ignore", DeprecationWarning)

    class LeasedCachePersistenceLayer(CommandHashes, CachePersistenceLayer):
        """Powertools' Redis layer whose in-progress put says when it replaced a lapsed lease, and whose
        saved result keeps the payload's hash (Powertools' own drops it, so every repeat would fail its
        payload check)."""

        def __init__(self, client: redis.Redis) -> None:
            super().__init__(client=client)  # type: ignore[arg-type]
            self._put_script = client.register_script(_PUT_IN_PROGRESS)
            self._put_completed_script = client.register_script(_PUT_COMPLETED)
            self.replaced_lapsed = False

        def begin(self) -> None:
            self.replaced_lapsed = False

        def note_refused(self) -> None:
            """Unmarked here: a refused attempt whose release failed is, once lapsed, taken as an unknown
            effect (checked, never rerun)."""

        def _get_expiry_timestamp(self) -> int:
            return int(super()._get_expiry_timestamp() + clock_offset())

        def _put_in_progress_record(self, data_record: DataRecord) -> None:
            offset = clock_offset()
            record: dict[str, Any] = {
                self.status_attr: data_record.status,
                self.expiry_attr: data_record.expiry_timestamp,
            }
            if data_record.in_progress_expiry_timestamp is not None:
                record[self.in_progress_expiry_attr] = int(
                    data_record.in_progress_expiry_timestamp + offset * 1000
                )
            if self.payload_validation_enabled:
                record[self.validation_key_attr] = data_record.payload_hash
            now = time.time() + offset
            outcome, found = self._put_script(
                keys=[data_record.idempotency_key],
                args=[json.dumps(record), self.expires_after_seconds, int(now), int(now * 1000)],
            )
            outcome = _text(outcome)
            if outcome == "held":
                held = self._item_to_data_record(data_record.idempotency_key, json.loads(_text(found)))
                self._validate_payload(data_payload=data_record, stored_data_record=held)
                raise IdempotencyItemAlreadyExistsError(old_data_record=held)
            self.replaced_lapsed = outcome == "replaced"

        def _update_record(self, data_record: DataRecord) -> None:
            ttl = self._get_expiry_second(data_record.expiry_timestamp)
            value = json.dumps(self._completed(data_record))
            self.client.set(name=data_record.idempotency_key, value=value, ex=ttl)

        def put_completed(self, data: dict[str, Any], result: dict[str, Any]) -> DataRecord | None:
            """As ``idempotency.StoresCompleted.put_completed``: one script, one round trip."""
            record = completed_record(self, data, result)
            outcome, found = self._put_completed_script(
                keys=[record.idempotency_key],
                args=[
                    json.dumps(self._completed(record)),
                    self.expires_after_seconds,
                    int(time.time() + clock_offset()),
                ],
            )
            if _text(outcome) == "stored":
                return None
            held = self._item_to_data_record(record.idempotency_key, json.loads(_text(found)))
            self._validate_payload(data_payload=record, stored_data_record=held)
            return held

        def _completed(self, data_record: DataRecord) -> dict[str, Any]:
            """The record of a result, as Powertools' cache layer saves it, with the payload's hash."""
            record = {
                self.data_attr: data_record.response_data,
                self.status_attr: data_record.status,
                self.expiry_attr: data_record.expiry_timestamp,
            }
            if self.payload_validation_enabled:
                record[self.validation_key_attr] = data_record.payload_hash
            return record


def redis_client(
    host: str, port: int, *, tls: bool, secret: str | None = None, timeout_seconds: float = 2.0
) -> redis.Redis:
    """A client for the endpoint; ``secret``: the AUTH token, plain or JSON ``username``/``password``."""
    import redis

    username, password = auth_credentials(secret)
    return redis.Redis(
        host=host,
        port=port,
        ssl=tls,
        username=username,
        password=password,
        socket_timeout=timeout_seconds,
        socket_connect_timeout=timeout_seconds,
        decode_responses=True,
    )


def auth_credentials(secret: str | None) -> tuple[str | None, str | None]:
    if not secret:
        return None, None
    try:
        parsed = json.loads(secret)
    except ValueError:
        return None, secret
    if isinstance(parsed, dict):
        return parsed.get("username"), parsed.get("password")
    return None, secret


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
