"""Cold start: a tracing SDK is imported only when ``TRACING_BACKEND`` chooses it. The whole incident
workflow runs in a fresh interpreter (tests/integration/cold_start_probe.py) and reports what it loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def loaded_after_a_workflow(backend: str) -> set[str]:
    ran = subprocess.run(
        [sys.executable, "-m", "tests.integration.cold_start_probe", backend],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    return set(json.loads(ran.stdout.strip().splitlines()[-1]))


def test_choosing_x_ray_imports_no_opentelemetry_module() -> None:
    # The local cloud runs without X-Ray unless a test captures segments (POWERTOOLS_TRACE_DISABLED), so
    # the stages make no Tracer and the X-Ray SDK is not imported either.
    assert loaded_after_a_workflow("xray") == set()


def test_choosing_opentelemetry_imports_it_and_not_the_x_ray_sdk() -> None:
    # A stage makes Powertools' Tracer, and so imports the X-Ray SDK, only with X-Ray on.
    assert loaded_after_a_workflow("otel") == {"opentelemetry"}
