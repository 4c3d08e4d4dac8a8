"""Execute's own classes, written by hand instead of made by ``dataclasses`` (a cold start compiles no
methods for them), behave as the dataclasses they were: the same signatures and defaults, the same
equality, hash and repr where they had them, and the frozen ones refuse assignment and deletion."""

from __future__ import annotations

import dataclasses
import inspect
import random
from dataclasses import FrozenInstanceError, dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from intentbus.adapters.dynamodb_guard import ClaimActions
from intentbus.adapters.idempotency import _LeaseContext
from intentbus.execution_claim import Claim, ClaimRequest, ClaimStatus
from intentbus.frozen import Frozen
from intentbus.stages.execute import ExecuteStage, _Attempt, _Read

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@dataclass(frozen=True)
class ClaimAsDataclass:
    """``Claim`` as ``dataclasses`` made it."""

    status: ClaimStatus
    holder: str | None = None
    run_status: str | None = None
    run_definition: tuple[str, str] | None = None


@dataclass(eq=False)
class ClaimRequestAsDataclass:
    """``ClaimRequest`` as ``dataclasses`` made it."""

    tenant_id: str
    run_id: str
    command_id: str
    resource: str | None
    seen_version: int | None
    authorization: str | None
    now: datetime
    definition: tuple[str, str] | None = None
    made: Claim | None = None


def _parameters(function: Any) -> list[tuple[str, Any, Any]]:
    return [
        (parameter.name, parameter.kind, parameter.default)
        for parameter in inspect.signature(function).parameters.values()
    ]


CLAIMS = [
    (ClaimStatus.CLAIMED,),
    (ClaimStatus.CONFLICT, "cmd-7"),
    (ClaimStatus.RUN_ENDED, None, "COMPLETED"),
    (ClaimStatus.RETIRED, None, None, ("incident", "2")),
]


@pytest.mark.parametrize("fields", CLAIMS)
def test_a_claim_is_equal_hashed_and_shown_as_its_dataclass_was(fields: tuple[Any, ...]) -> None:
    claim, before = Claim(*fields), ClaimAsDataclass(*fields)

    assert repr(claim) == repr(before).replace("ClaimAsDataclass", "Claim")
    assert hash(claim) == hash(before)
    assert claim == Claim(*fields)
    assert claim != Claim(ClaimStatus.NOT_AUTHORIZED)
    assert claim != before, "another class's claim is not equal, as between two dataclasses"
    assert (claim == fields) is False
    assert {claim, Claim(*fields)} == {claim}


def test_claims_are_made_as_before() -> None:
    assert _parameters(Claim) == _parameters(ClaimAsDataclass)
    assert Claim(ClaimStatus.CONFLICT, holder="cmd-1") == Claim(ClaimStatus.CONFLICT, "cmd-1", None, None)


def test_a_claim_request_is_made_shown_and_compared_as_before() -> None:
    fields: dict[str, Any] = {
        "tenant_id": "acme",
        "run_id": "run-1",
        "command_id": "cmd-1",
        "resource": "ecs:shop/api",
        "seen_version": 3,
        "authorization": "digest",
        "now": NOW,
        "definition": ("incident", "1"),
    }
    request, before = ClaimRequest(**fields), ClaimRequestAsDataclass(**fields)

    assert _parameters(ClaimRequest) == _parameters(ClaimRequestAsDataclass)
    assert repr(request) == repr(before).replace("ClaimRequestAsDataclass", "ClaimRequest")
    assert request.arguments() == {name: value for name, value in vars(before).items() if name != "made"}
    assert request != ClaimRequest(**fields), "compared by identity, as with eq=False"
    assert request == request  # noqa: PLR0124 - identity is its equality
    request.made = Claim(ClaimStatus.CLAIMED)
    assert request.take() == Claim(ClaimStatus.CLAIMED)
    assert request.made is None


def _read() -> _Read:
    return _Read(fact=object(), authorization="digest", dumped={})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "make",
    [
        lambda: Claim(ClaimStatus.CLAIMED),
        lambda: ClaimActions([]),
        _read,
    ],
    ids=["Claim", "ClaimActions", "_Read"],
)
def test_the_frozen_ones_refuse_assignment_and_deletion(make: Any) -> None:
    frozen = make()
    name = next(iter(vars(frozen)))
    value = getattr(frozen, name)

    assert isinstance(frozen, Frozen)
    with pytest.raises(FrozenInstanceError, match=f"cannot assign to field '{name}'"):
        setattr(frozen, name, "other")
    with pytest.raises(FrozenInstanceError, match=f"cannot delete field '{name}'"):
        delattr(frozen, name)
    with pytest.raises(FrozenInstanceError):
        frozen.unknown = 1
    assert getattr(frozen, name) is value


def test_claim_actions_and_reads_take_their_defaults() -> None:
    refused = Claim(ClaimStatus.NOT_AUTHORIZED)
    assert vars(ClaimActions([])) == {"actions": [], "refused": None}
    assert vars(ClaimActions([{"Update": {}}], refused)) == {"actions": [{"Update": {}}], "refused": refused}
    fact = object()
    assert vars(_Read(fact, "digest", {"id": "c"})) == {  # type: ignore[arg-type]
        "fact": fact,
        "authorization": "digest",
        "dumped": {"id": "c"},
        "declared": None,
        "resource": None,
        "not_declared": None,
    }
    read = _Read(object(), "digest", {}, None, "ecs:shop/api", "why")  # type: ignore[arg-type]
    assert (read.authorization, read.declared, read.resource, read.not_declared) == (
        "digest",
        None,
        "ecs:shop/api",
        "why",
    )


def test_the_stage_and_its_attempt_take_their_fields_as_before() -> None:
    assert [name for name, _, _ in _parameters(ExecuteStage)] == [
        "deps",
        "runner",
        "clients",
        "guard",
        "store",
        "jitter",
    ]
    assert inspect.signature(ExecuteStage).parameters["store"].default is None
    assert inspect.signature(ExecuteStage).parameters["jitter"].default is random.random
    parts: list[Any] = [object() for _ in range(12)]
    stage = ExecuteStage(*parts[:4])
    assert [stage.deps, stage.runner, stage.clients, stage.guard] == parts[:4]
    assert stage.store is None
    assert stage.jitter is random.random
    assert stage == stage  # noqa: PLR0124 - identity is its equality
    assert stage != ExecuteStage(*parts[:4])

    attempt = _Attempt(*parts[:10])
    assert vars(attempt) == {
        "stage": parts[0],
        "incoming": parts[1],
        "command": parts[2],
        "tool": parts[3],
        "arguments": parts[4],
        "resource": parts[5],
        "seen_version": parts[6],
        "workflow": parts[7],
        "claim_request": parts[8],
        "dumped": parts[9],
        "made": None,
        "made_fact": None,
    }
    made = _Attempt(*parts)
    assert (made.made, made.made_fact) == (parts[10], parts[11])
    assert not dataclasses.is_dataclass(attempt)


class _Context:
    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@pytest.mark.parametrize(("lease", "remaining"), [(None, 30_000), (5.0, 5_000), (60.0, 30_000)])
def test_the_lease_context_caps_the_remaining_time(lease: float | None, remaining: int) -> None:
    context = _LeaseContext(_Context(), lease)  # type: ignore[arg-type]

    assert context.get_remaining_time_in_millis() == remaining
    assert context.lease_seconds == lease
