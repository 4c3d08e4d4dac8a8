"""What every test process shares: botocore's service models, read from its data files once.

Each local cloud a test starts, and each function's cold start in it, makes botocore sessions that
would read the same JSON models again (about 0.7 s of CPU per local cloud here); see
``intentbus_faults.speedups.shared_service_models``. Module state and clients stay per sandbox.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from intentbus_faults.speedups import shared_service_models


@pytest.fixture(scope="session", autouse=True)
def _service_models_read_once() -> Iterator[None]:
    with shared_service_models():
        yield
