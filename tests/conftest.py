"""What every test process shares: botocore's service models, read from its data files once.

Each local cloud a test starts, and each function's cold start in it, makes botocore sessions that
would read the same JSON models again (about 0.7 s of CPU per local cloud here); see
``intentbus_local.service_models.shared_service_models``. Module state and clients stay per sandbox.

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) runs every property test from a fixed seed, so a CI run
is reproducible; a developer's run keeps exploring new examples and saves what fails to
``.hypothesis``. Neither profile has Hypothesis's per-example deadline: how long an example takes is a
benchmark's question (``make bench``), and on a shared machine under load a deadline failed tests whose
outcome was right.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from intentbus_local.service_models import shared_service_models

settings.register_profile("local", deadline=None)
settings.register_profile("ci", settings.get_profile("local"), derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "local"))


@pytest.fixture(scope="session", autouse=True)
def _service_models_read_once() -> Iterator[None]:
    with shared_service_models():
        yield


@pytest.fixture
def fake_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials and a region that reach no account: moto (or a faked send) answers the calls."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture(scope="session")
def hot_paths_applied() -> None:
    """The local cloud's replacements of moto's code installed (``intentbus_local.hot_paths``). The first
    ``apply`` in a process imports and checks all the code they replace (1-4 s): a property test takes
    this fixture so that cost is paid before its first example, whichever test happens to run first."""
    from intentbus_local import hot_paths

    hot_paths.apply()
