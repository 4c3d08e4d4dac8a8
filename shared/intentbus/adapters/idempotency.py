"""Exactly-once execution on Powertools' Idempotency utility (its own DynamoDB table, keyed by ``id``).

Powertools re-runs a function whose in-progress record lapsed, saying nothing of the earlier
attempt. The client it is given here asks DynamoDB for the replaced item (``ReturnValues=ALL_OLD``,
no extra call), so a tool that is unsafe to repeat is reconciled instead of run blindly again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyValidationError
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus.envelope import Envelope
from intentbus.ports import KeyHeldByAnotherCommand, OutcomeInDoubt

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Stable across function renames, so a renamed function does not run a command again.
KEY_PREFIX = "intentbus.execute"
IN_PROGRESS = "INPROGRESS"


class LapseWatchingClient:
    """The DynamoDB client Powertools writes through; notes when an in-progress put replaced a lapsed one.

    Where the local cloud's virtual clock runs, the put's notion of "now" follows it, so a lease
    lapses in virtual time as it would on AWS.
    """

    def __init__(self, client: DynamoDBClient) -> None:
        self._client = client
        self.replaced_lapsed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def put_item(self, **kwargs: Any) -> Any:
        if kwargs.get("Item", {}).get("status", {}).get("S") != IN_PROGRESS:
            return self._client.put_item(**kwargs)
        offset = _clock_offset()
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
        self.replaced_lapsed = old.get("status", {}).get("S") == IN_PROGRESS
        return response

    def update_item(self, **kwargs: Any) -> Any:
        """Powertools' save of the result: its expiry, too, in the clock the condition uses."""
        offset = _clock_offset()
        if offset and ":expiry" in kwargs.get("ExpressionAttributeValues", {}):
            values = dict(kwargs["ExpressionAttributeValues"])
            _shift(values, ":expiry", offset)
            kwargs = {**kwargs, "ExpressionAttributeValues": values}
        return self._client.update_item(**kwargs)


def _clock_offset() -> float:
    return float(os.environ.get(CLOCK_OFFSET_ENV, "0") or 0)


def _shift(values: dict[str, Any], name: str, seconds: float) -> None:
    """Every time Powertools writes or compares is real time; moved, all of them are virtual time."""
    if name in values:
        values[name] = {"N": str(int(float(values[name]["N"]) + seconds))}


@dataclass
class _LeaseContext:
    """The Lambda context with the in-progress lease capped: the lease follows the remaining time."""

    context: LambdaContext
    lease_seconds: float | None

    def get_remaining_time_in_millis(self) -> int:
        remaining = self.context.get_remaining_time_in_millis()
        if self.lease_seconds is None:
            return remaining
        return min(remaining, int(self.lease_seconds * 1000))


class PowertoolsIdempotentRunner:
    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient,
        *,
        retention_seconds: int,
        lease_seconds: float | None = None,
    ) -> None:
        self.config = IdempotencyConfig(
            # Namespaced by tenant: no tenant can claim (or pre-claim) another tenant's key.
            event_key_jmespath="[tenant_id, idempotency_key]",
            payload_validation_jmespath="payload",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=retention_seconds,
        )
        self._lease_seconds = lease_seconds
        self._client = LapseWatchingClient(client)
        persistence = DynamoDBPersistenceLayer(table_name=table_name, boto3_client=self._client)  # type: ignore[arg-type]
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
    ) -> dict[str, Any]:
        self._client.replaced_lapsed = False

        def attempt() -> dict[str, Any]:
            try:
                if self._client.replaced_lapsed and after_lapse is not None:
                    return after_lapse()
                return work()
            except OutcomeInDoubt as doubt:
                raise _KeepInProgress(doubt) from doubt

        try:
            result: dict[str, Any] = self._run(command=command.to_json_dict(), work=attempt)
        except _KeepInProgress as kept:
            raise kept.doubt from kept.doubt.__cause__
        except IdempotencyValidationError as error:
            raise KeyHeldByAnotherCommand(str(error)) from error
        return result


class _KeepInProgress(BaseException):
    """Carries an ``OutcomeInDoubt`` past Powertools, which deletes the in-progress record on any
    ``Exception``: deleted, the next attempt would look fresh and run the work blindly again."""

    def __init__(self, doubt: OutcomeInDoubt) -> None:
        super().__init__(str(doubt))
        self.doubt = doubt


def _call(command: dict[str, Any], work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    return work()
