"""The local cloud's lookup of moto's per-account backends: pinned to moto's source, and answering what
moto's own ``BackendDict.__getitem__`` answers (the same backend, the same dicts listed as in use)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from intentbus_local import account_backends

pytestmark = pytest.mark.usefixtures("hot_paths_applied")


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    assert account_backends.PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {account_backends.PINS.found_on}): compare "
        "the replacement with moto's new code, then update its digest"
    )


@pytest.fixture
def backend_dicts() -> Iterator[tuple[Any, Any]]:
    """Two dicts of one moto backend class, not in use until a lookup lists them."""
    from moto.core.base_backend import BackendDict
    from moto.sqs.models import SQSBackend

    with mock_aws():
        yield (
            BackendDict(SQSBackend, "sqs", use_boto3_regions=False, additional_regions=["us-east-1"]),
            BackendDict(SQSBackend, "sqs", use_boto3_regions=False, additional_regions=["us-east-1"]),
        )


_ACCOUNTS = st.sampled_from(["111111111111", "222222222222", "123456789012"])


class _Account(str):
    """A key that is a ``str`` but not a plain one: moto's own code looks it up."""


def _in_use() -> list[Any]:
    """moto's list of the backend dicts in use (``BackendDict._instances``)."""
    from moto.core.base_backend import BackendDict

    return BackendDict._instances  # type: ignore[misc]


_Lookup = tuple[int, str]
_Step = tuple[str, str, list[list[str]], list[int]]
"""(the backend's account, its class, each dict's accounts, which dicts are listed in use, in order)."""


def _played(lookups: list[_Lookup], resets: list[int], getitem: Any) -> list[_Step]:
    from moto.core.base_backend import BackendDict
    from moto.sqs.models import SQSBackend

    pair = [
        BackendDict(SQSBackend, "sqs", use_boto3_regions=False, additional_regions=["us-east-1"])
        for _ in range(2)
    ]
    BackendDict.reset()
    steps: list[_Step] = []
    for step, (which, account_id) in enumerate(lookups):
        if step in resets:
            BackendDict.reset()
        found = getitem(pair[which], account_id)
        assert found is dict.__getitem__(pair[which], account_id)
        listed = [index for listed in _in_use() for index in (0, 1) if listed is pair[index]]
        steps.append((found.account_id, type(found).__name__, [list(d) for d in pair], listed))
    return steps


@given(
    lookups=st.lists(
        st.tuples(st.integers(0, 1), st.one_of(_ACCOUNTS, _ACCOUNTS.map(_Account))),
        min_size=1,
        max_size=12,
    ),
    resets=st.lists(st.integers(0, 11), max_size=2),
)
def test_each_lookup_answers_and_lists_as_moto_s_own(lookups: list[_Lookup], resets: list[int]) -> None:
    moto_getitem = account_backends.PINS.moto_original("BackendDict.__getitem__")
    with mock_aws():
        replaced = _played(lookups, resets, lambda backends, account_id: backends[account_id])
        own = _played(lookups, resets, moto_getitem)

    assert replaced == own


def test_a_dict_dropped_from_use_is_listed_again_by_its_next_lookup(backend_dicts: tuple[Any, Any]) -> None:
    backend_dict, _ = backend_dicts
    first = backend_dict["111111111111"]
    _in_use().remove(backend_dict)  # as if listed by another run, its accounts kept

    assert backend_dict["111111111111"] is first
    assert any(listed is backend_dict for listed in _in_use())


def test_a_subclass_with_its_own_account_setup_is_not_bypassed(backend_dicts: tuple[Any, Any]) -> None:
    from moto.core.base_backend import BackendDict
    from moto.sqs.models import SQSBackend

    set_up: list[str] = []

    class Counting(BackendDict):  # type: ignore[type-arg]
        def _create_account_specific_backend(self, account_id: str) -> None:
            set_up.append(account_id)
            super()._create_account_specific_backend(account_id)

    counting = Counting(SQSBackend, "sqs", use_boto3_regions=False, additional_regions=["us-east-1"])
    counting["111111111111"]
    counting["111111111111"]

    assert set_up == ["111111111111", "111111111111"]


def test_the_lookup_of_a_known_account_is_the_replacement_s_own(backend_dicts: tuple[Any, Any]) -> None:
    """Fails when the replacement is not installed or hands a known account over to moto's code (which
    takes the backends' lock on every lookup)."""
    from moto.core import base_backend

    backend_dict, _ = backend_dicts
    backend_dict["111111111111"]
    moto_lock = base_backend.backend_lock
    taken: list[bool] = []

    class CountedLock:
        def __enter__(self) -> None:
            taken.append(True)
            moto_lock.__enter__()

        def __exit__(self, *exc: Any) -> None:
            moto_lock.__exit__(*exc)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base_backend, "backend_lock", CountedLock())
        backend_dict["111111111111"]
        assert taken == []
        backend_dict["222222222222"]  # a new account: moto's own code sets it up
        assert taken == [True]
