"""An invocation's environment is undone exactly: whatever the handler set, changed or removed, the process
environment (``os.environ`` and what the C library's ``getenv`` sees) is the one from before."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus_local import environ_snapshot

_NAMES = st.sampled_from(["IB_SNAP_A", "IB_SNAP_B", "IB_SNAP_C", "PATH", "HOME"])
_VALUES = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12
) | st.sampled_from(["caf\udce9", ""])  # a value os.environ holds surrogate-escaped
_EDITS = st.lists(st.tuples(_NAMES, st.none() | _VALUES), max_size=8)
"""(name, value): set it to value, or remove it when None."""


@pytest.fixture(autouse=True)
def environment_kept() -> Iterator[None]:
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)


def _edited(edits: list[tuple[str, str | None]]) -> None:
    for name, value in edits:
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@given(before=_EDITS, during=_EDITS)
def test_the_environment_is_the_one_from_before_whatever_was_done_in_between(
    before: list[tuple[str, str | None]], during: list[tuple[str, str | None]]
) -> None:
    _edited(before)
    expected = dict(os.environ)
    snapshot = environ_snapshot.Snapshot()
    _edited(during)

    snapshot.restore()

    assert dict(os.environ) == expected


@given(before=_EDITS, during=_EDITS)
def test_without_the_encoded_copy_the_decoded_one_puts_back_the_same(
    before: list[tuple[str, str | None]], during: list[tuple[str, str | None]]
) -> None:
    _edited(before)
    expected = dict(os.environ)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(environ_snapshot, "_encoded", lambda: None)
        snapshot = environ_snapshot.Snapshot()
        _edited(during)
        snapshot.restore()

    assert dict(os.environ) == expected


def test_a_child_process_sees_the_restored_environment() -> None:
    os.environ["IB_SNAP_KEPT"] = "before"
    os.environ.pop("IB_SNAP_ADDED", None)
    snapshot = environ_snapshot.Snapshot()
    os.environ["IB_SNAP_KEPT"] = "during"
    os.environ["IB_SNAP_ADDED"] = "during"

    snapshot.restore()

    seen = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getenv('IB_SNAP_KEPT'), os.getenv('IB_SNAP_ADDED'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert seen == ["before", "None"]


def test_an_unchanged_environment_is_neither_decoded_nor_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails when the snapshot decodes every variable (the cost it exists to avoid)."""
    environ_type: Any = type(os.environ)
    touched: list[str] = []
    read, write = environ_type.__getitem__, environ_type.__setitem__

    def counted_read(self: Any, key: str) -> Any:
        touched.append(key)
        return read(self, key)

    def counted_write(self: Any, key: str, value: str) -> None:
        touched.append(key)
        write(self, key, value)

    monkeypatch.setattr(environ_type, "__getitem__", counted_read)
    monkeypatch.setattr(environ_type, "__setitem__", counted_write)

    snapshot = environ_snapshot.Snapshot()
    snapshot.restore()

    assert touched == []
