"""The execution guard on the workflow table: checks read once, the resource claimed in one write.

Before a command's tool runs, one strongly consistent read checks that the run exists, has not ended
and was started under the workflow definition the command's tool belongs to (a run stored before
definitions were stored passes), and that the command's authorization is recorded with this fact's
digest (an ALLOW verdict or an approver's decision wrote it). The authorization item is write-once, so
reading it is as good as a check inside the write; the run's status is read, not checked in the write:
a run that ends a moment after the read is no different from one that ends while the tool runs.
For a command that names a resource, one conditional update then moves the resource item from the
version the command was authorized at to the next one. Of commands authorized at one version only the
first to claim runs; the rest find the version moved and are conflicts. A claim by the same command
again (a retry after a crash) passes, so a holder that died never blocks its resource: there is nothing
to release, and a command authorized after the claim reads the new version.

An SQS batch's checks are read ahead together (``prefetch``: one BatchGetItem per 100 keys, keys left
unprocessed asked once more, their claims then read alone; a read that fails leaves every claim to read
alone). Each answer holds only its own request's keys (its tenant's run and that command's authorization)
and is served once, to the first claim with exactly that request's ``key``; any later claim (after a
lapsed attempt, a legacy run's second look, a claim the in-progress write could not make) reads again.
Read a little earlier, the answer is as good: the authorization item is written once, before the
CommandAuthorized it authorizes is published, so a genuine fact's is there when its batch is read and a
forgery's digest is never there; the run's status read at the start of the batch is no different from
one that ends while the tool runs, as above, and the definition a run was started under never changes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from intentbus.adapters.dynamodb_store import (
    RESOURCE_SK,
    STATE_SK,
    auth_sk,
    read_keys_together,
    resource_pk,
    run_pk,
)
from intentbus.execution_claim import Claim, ClaimRequest, ClaimStatus
from intentbus.frozen import FrozenPlain
from intentbus.run_status import LEGACY_CHECKS, TERMINAL

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

logger = logging.getLogger(__name__)

_PROJECTION = {
    "ProjectionExpression": "pk, sk, #status, workflow, #definition, digest",
    "ExpressionAttributeNames": {"#status": "status", "#definition": "definition"},
}
"""What a check reads of the run's state and the authorization items."""


class ClaimActions(FrozenPlain):  # never compared nor printed (equal only to itself): ``intentbus.frozen``
    """A claim as read and prepared: the guard's refusal if its read already refused, else the resource
    move (no action for a command without a resource) for one write, and how to read its cancellation."""

    actions: list[dict[str, Any]]
    refused: Claim | None

    def __init__(self, actions: list[dict[str, Any]], refused: Claim | None = None) -> None:
        object.__setattr__(self, "actions", actions)
        object.__setattr__(self, "refused", refused)

    def refusal(self, reasons: list[dict[str, Any]]) -> Claim | None:
        """Why the resource move was refused, from the cancellation reasons of these actions (in order);
        ``None`` if it was cancelled for another reason."""
        if self.actions and reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
            holder = reasons[0].get("Item", {}).get("holder", {}).get("S")
            return Claim(ClaimStatus.CONFLICT, holder=holder)
        return None


class DynamoExecutionGuard:
    def __init__(self, table_name: str, client: DynamoDBClient) -> None:
        self._table = table_name
        self._client = client
        self._ready: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
        """Checks read ahead (``prefetch``): by the claim's key, its items by sort key."""

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
        return self.claim_request(
            ClaimRequest(
                tenant_id=tenant_id,
                run_id=run_id,
                command_id=command_id,
                resource=resource,
                seen_version=seen_version,
                authorization=authorization,
                now=now,
                definition=definition,
            )
        )

    def claim_request(self, request: ClaimRequest) -> Claim:
        """``claim``, asked as the request execute made (not taken apart into arguments and made again)."""
        prepared = self.actions(request)
        if prepared.refused is not None:
            return prepared.refused
        if not prepared.actions:
            return Claim(ClaimStatus.CLAIMED)
        (move,) = prepared.actions
        try:
            self._client.update_item(**move["Update"])
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            response: dict[str, Any] = dict(error.response)
            item: dict[str, Any] = response.get("Item", {})
            return Claim(ClaimStatus.CONFLICT, holder=item.get("holder", {}).get("S"))
        return Claim(ClaimStatus.CLAIMED)

    def actions(self, request: ClaimRequest) -> ClaimActions:
        """Reads the run and the authorization; the claim's write, for ``claim`` or for a caller that
        folds it into its own transaction."""
        refused = self._checked(request)
        if refused is not None:
            return ClaimActions([], refused)
        if request.resource is None:
            return ClaimActions([])
        seen = request.seen_version or 0
        move = {
            "TableName": self._table,
            "Key": {
                "pk": {"S": resource_pk(request.tenant_id, request.resource)},
                "sk": {"S": RESOURCE_SK},
            },
            "UpdateExpression": "SET #version = :next, holder = :command, claimed_at = :now",
            "ConditionExpression": (
                "(attribute_not_exists(#version) AND :seen = :zero) OR #version = :seen OR holder = :command"
            ),
            "ExpressionAttributeNames": {"#version": "version"},
            "ExpressionAttributeValues": {
                ":next": {"N": str(seen + 1)},
                ":seen": {"N": str(seen)},
                ":zero": {"N": "0"},
                ":command": {"S": request.command_id},
                ":now": {"S": request.now.isoformat()},
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        return ClaimActions([{"Update": move}])

    def prefetch(self, requests: Sequence[ClaimRequest]) -> None:
        """Reads what these claims check, together (see the module's docstring); replaces what an
        earlier batch left. A lone claim's own read costs the same one call: nothing is read ahead."""
        self._ready = {}
        keys_of = {request.key(): _check_keys(request) for request in requests}
        if len(keys_of) < 2:
            return
        try:
            wanted = list(dict.fromkeys(key for keys in keys_of.values() for key in keys))
            found, unread = read_keys_together(self._client, self._table, wanted, **_PROJECTION)
        except Exception:
            logger.warning("the batch's claims could not be checked together; each claim reads its own")
            return
        self._ready = {
            request: {sk: found[(pk, sk)] for pk, sk in keys if (pk, sk) in found}
            for request, keys in keys_of.items()
            if unread.isdisjoint(keys)
        }

    def forget(self) -> None:
        self._ready = {}

    @property
    def prefetched(self) -> int:
        """How many checks read ahead are still waiting for their claim."""
        return len(self._ready)

    def _checked(self, request: ClaimRequest) -> Claim | None:
        """The refusal from one consistent read of the run's state and the command's authorization
        (read ahead with the batch's, if it was and this claim is the first to ask)."""
        by_sk = self._ready.pop(request.key(), None)
        if by_sk is None:
            by_sk = self._read_alone(request)
        if request.authorization is not None:
            granted = by_sk.get(auth_sk(request.command_id), {}).get("digest", {}).get("S")
            if granted != request.authorization:
                return Claim(ClaimStatus.NOT_AUTHORIZED)
        return _run_refused(by_sk.get(STATE_SK, {}), request.definition)

    def _read_alone(self, request: ClaimRequest) -> dict[str, dict[str, Any]]:
        keys = [{"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in _check_keys(request)]
        found: list[dict[str, Any]] = []
        ask: dict[str, Any] = {self._table: {"Keys": keys, "ConsistentRead": True, **_PROJECTION}}
        while ask:
            response = self._client.batch_get_item(RequestItems=ask)
            found.extend(response["Responses"].get(self._table, []))
            ask = dict(response.get("UnprocessedKeys") or {})
        return {item["sk"]["S"]: item for item in found}

    def predates_authorizations(self, tenant_id: str, run_id: str) -> bool:
        from intentbus.adapters.dynamodb_store import state_from_item

        response = self._client.get_item(
            TableName=self._table,
            Key={"pk": {"S": run_pk(tenant_id, run_id)}, "sk": {"S": STATE_SK}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        if item is None:
            return False
        return state_from_item(item).checks == LEGACY_CHECKS


def _check_keys(request: ClaimRequest) -> list[tuple[str, str]]:
    """The items a claim's check reads: the run's state, and the command's authorization if it has one."""
    pk = run_pk(request.tenant_id, request.run_id)
    keys = [(pk, STATE_SK)]
    if request.authorization is not None:
        keys.append((pk, auth_sk(request.command_id)))
    return keys


def _run_refused(item: dict[str, Any], definition: tuple[str, str] | None) -> Claim | None:
    """Why the run refuses the claim, from its state item as read: none, ended, or another definition."""
    status = item.get("status", {}).get("S")
    if status is None:
        return Claim(ClaimStatus.NOT_AUTHORIZED)
    if status in TERMINAL:  # StrEnum members: a status text is found by its value
        return Claim(ClaimStatus.RUN_ENDED, run_status=status)
    if definition is None:
        return None
    started_under = (item.get("workflow", {}).get("S", ""), item.get("definition", {}).get("S"))
    if started_under[0] == definition[0] and started_under[1] in (None, definition[1]):
        return None
    return Claim(
        ClaimStatus.RETIRED, run_status=status, run_definition=(started_under[0], started_under[1] or "")
    )
