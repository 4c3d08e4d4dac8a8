"""An attempt that died holding the in-progress lock: Powertools would re-run it; intentbus says so."""

from __future__ import annotations

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
)
from botocore.exceptions import ClientError

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus.adapters.idempotency import PowertoolsIdempotentRunner
from intentbus.envelope import Envelope
from intentbus.errors import NotRecorded
from tests.command_envelopes import command_envelope
from tests.integration.conftest_moto import (  # noqa: F401
    Crash,
    aws,
    client,
    crash,
    execute_runner,
)


@pytest.fixture
def runner(aws: None, monkeypatch: pytest.MonkeyPatch) -> PowertoolsIdempotentRunner:  # noqa: F811
    return execute_runner(monkeypatch, client("dynamodb"))


def command(key: str) -> Envelope:
    return command_envelope(key)


def test_a_lapsed_lock_goes_to_the_reconcile_path_not_the_tool(
    runner: PowertoolsIdempotentRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Crash):
        runner.run(command("idem_1"), crash)
    with pytest.raises(IdempotencyAlreadyInProgressError):
        runner.run(command("idem_1"), lambda: {"ran": True})

    monkeypatch.setenv(CLOCK_OFFSET_ENV, "31")  # the 30 s lease has lapsed on the virtual clock
    result = runner.run(command("idem_1"), lambda: {"ran": True}, after_lapse=lambda: {"reconciled": True})

    assert result == {"reconciled": True}
    assert runner.run(command("idem_1"), lambda: {"ran": "again"}) == {"reconciled": True}


def test_the_lease_is_capped_apart_from_the_retention(
    runner: PowertoolsIdempotentRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Crash):
        runner.run(command("idem_2"), crash)
    monkeypatch.setenv(CLOCK_OFFSET_ENV, "29")
    with pytest.raises(IdempotencyAlreadyInProgressError):
        runner.run(command("idem_2"), lambda: {"ran": True})
    monkeypatch.setenv(CLOCK_OFFSET_ENV, "31")
    assert runner.run(command("idem_2"), lambda: {"ran": True}) == {"ran": True}


def test_a_first_attempt_is_never_taken_for_a_lapsed_one(runner: PowertoolsIdempotentRunner) -> None:
    assert runner.run(command("idem_3"), lambda: {"ran": True}, after_lapse=lambda: {"reconciled": True}) == {
        "ran": True
    }


def refused() -> dict[str, object]:
    raise NotRecorded("no authorization of this command matching this CommandAuthorized is recorded")


def test_a_forged_copy_that_takes_over_a_lapsed_record_leaves_it_for_the_real_check(
    runner: PowertoolsIdempotentRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack: the real attempt's effect was taken and its lease lapsed; a forged copy of its fact
    (same key and payload) lands first. Refused, it must not release the record the real attempt left."""
    with pytest.raises(Crash):
        runner.run(command("idem_4"), crash)
    monkeypatch.setenv(CLOCK_OFFSET_ENV, "31")
    with pytest.raises(NotRecorded):
        runner.run(command("idem_4"), refused, after_lapse=refused)

    with pytest.raises(IdempotencyAlreadyInProgressError):  # the forgery's lease is held
        runner.run(command("idem_4"), lambda: {"ran": "again"}, after_lapse=lambda: {"reconciled": True})
    monkeypatch.setenv(CLOCK_OFFSET_ENV, "62")
    result = runner.run(command("idem_4"), lambda: {"ran": "again"}, after_lapse=lambda: {"reconciled": True})

    assert result == {"reconciled": True}


def test_a_refused_attempt_whose_release_failed_is_not_taken_for_an_unknown_effect(
    aws: None,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dynamodb = client("dynamodb")
    runner = execute_runner(monkeypatch, dynamodb)
    real_delete = dynamodb.delete_item

    def throttled(**kwargs: object) -> object:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "DeleteItem")

    monkeypatch.setattr(dynamodb, "delete_item", throttled)
    with pytest.raises(IdempotencyPersistenceLayerError):  # refused, but its record could not be released
        runner.run(command("idem_5"), refused, after_lapse=refused)
    monkeypatch.setattr(dynamodb, "delete_item", real_delete)

    monkeypatch.setenv(CLOCK_OFFSET_ENV, "31")
    result = runner.run(command("idem_5"), lambda: {"ran": True}, after_lapse=lambda: {"reconciled": True})

    assert result == {"ran": True}, "nothing ran under the refused attempt: there is nothing to reconcile"
