"""Cold-start import time of each stage handler against the baseline, in fresh processes, interleaved."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("validate", "decide", "authorize", "execute", "record")
BASELINE = "baseline"

_PROBE = """
import sys, time
sys.path[:0] = [{code!r}, {shared!r}]
started = time.perf_counter()
import {module}
print((time.perf_counter() - started) * 1000)
"""

# What Lambda and template.yaml set; tracing is off so no X-Ray daemon is looked for, in both.
_ENV = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "bench",
    "POWERTOOLS_METRICS_NAMESPACE": "intentbus",
    "POWERTOOLS_TRACE_DISABLED": "true",
}


def _import_ms(code_dir: Path, module: str) -> float:
    probe = _PROBE.format(code=str(code_dir), shared=str(ROOT / "shared"), module=module)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")} | _ENV
    output = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=env
    )
    return float(output.stdout.strip().splitlines()[-1])


def measure(rounds: int = 7) -> dict[str, float]:
    """Median import milliseconds by handler; rounds interleave the handlers so drift hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in (BASELINE, *STAGES)}
    for _ in range(rounds):
        samples[BASELINE].append(_import_ms(ROOT / "tests" / "bench", "baseline_handler"))
        for stage in STAGES:
            samples[stage].append(_import_ms(ROOT / "functions" / stage, "app"))
    return {name: statistics.median(values) for name, values in samples.items()}
