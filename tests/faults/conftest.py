"""One fault harness (one in-process local cloud, ~5 s to provision) per test module of tests/faults.

Module-scoped, not session-scoped: in-process moto is process-wide, so it must be gone before the
next module's stack starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from intentbus_faults.harness import FaultHarness


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultHarness]:
    with FaultHarness(logs_dir=Path(tmp_path_factory.mktemp("fault-logs"))) as running:
        yield running
