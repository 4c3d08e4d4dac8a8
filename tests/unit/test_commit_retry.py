"""The one read-commit-retry loop: bounded attempts, then ConcurrentUpdate (or the caller's answer)."""

from __future__ import annotations

import pytest

from intentbus.stages.common import COMMIT_ATTEMPTS, ConcurrentUpdate, retry_on_conflict


def test_it_returns_the_first_attempt_that_commits() -> None:
    answers = iter([None, None, "committed"])
    calls: list[int] = []

    def attempt() -> str | None:
        calls.append(1)
        return next(answers)

    assert retry_on_conflict(attempt, exhausted="run r changed") == "committed"
    assert len(calls) == 3


def test_past_the_last_attempt_it_raises_concurrent_update_for_sqs_to_retry() -> None:
    calls: list[int] = []

    def attempt() -> str | None:
        calls.append(1)
        return None

    with pytest.raises(ConcurrentUpdate) as raised:
        retry_on_conflict(attempt, exhausted=f"run r changed {COMMIT_ATTEMPTS} times under record")
    assert str(raised.value) == "run r changed 3 times under record"
    assert len(calls) == COMMIT_ATTEMPTS == 3
    assert raised.value.code == "concurrent_update"


def test_a_caller_may_answer_exhaustion_itself() -> None:
    assert retry_on_conflict(lambda: None, exhausted=list) == []  # the expiry sweep: left to the next sweep
