"""Unit tests exercise the pure core: any attempt to open a network connection fails the test."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.unit import sample_workflow


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("unit tests must not open network connections")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def sample_runs_cleared() -> Iterator[None]:
    """``sample_workflow.RUNS`` (what its tools ran) empty before and after the test."""
    sample_workflow.RUNS.clear()
    yield
    sample_workflow.RUNS.clear()
