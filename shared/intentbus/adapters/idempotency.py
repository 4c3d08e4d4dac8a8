"""Exactly-once execution on Powertools' Idempotency utility (its own DynamoDB table, keyed by ``id``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.envelope import Envelope

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Stable across function renames, so a renamed function does not run a command again.
KEY_PREFIX = "intentbus.execute"


class PowertoolsIdempotentRunner:
    def __init__(self, table_name: str, client: DynamoDBClient, *, retention_seconds: int) -> None:
        self.config = IdempotencyConfig(
            event_key_jmespath="idempotency_key",
            payload_validation_jmespath="payload",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=retention_seconds,
        )
        persistence = DynamoDBPersistenceLayer(table_name=table_name, boto3_client=client)
        self._run = idempotent_function(
            data_keyword_argument="command",
            persistence_store=persistence,
            config=self.config,
            key_prefix=KEY_PREFIX,
        )(_call)

    def bind(self, context: LambdaContext) -> None:
        """The in-progress lock then lapses with the invocation, not when the whole record expires."""
        self.config.register_lambda_context(context)

    def run(self, command: Envelope, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = self._run(command=command.to_json_dict(), work=work)
        return result


def _call(command: dict[str, Any], work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    return work()
