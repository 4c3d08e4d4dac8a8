"""CPU per record and cold start of each stage's real handler, against a baseline in the same run.

Each figure comes from fresh interpreters (``tests.bench.stage_probe``) running ``functions/<stage>/app.py``
as Lambda would: its environment from the template (via the local cloud), ``LAMBDA_TASK_ROOT`` and
``AWS_LAMBDA_FUNCTION_NAME`` set, batches of 10 SQS records (the template's ``BatchSize``) as the stage
got them when ten incidents ran at once on moto (``tests.bench.stage_capture``: ten distinct runs a batch,
so a batch's snapshots are read in one call), fed in turn, and AWS answered at botocore's HTTP send with
the responses moto gave in that run. The baseline (``tests.bench.baseline_handler``) is a
minimal Powertools SQS handler making one PutItem and one PutEvents per record, fed the same records.

``measure_stages()`` returns, per stage (and ``baseline``):

- ``cpu_ms_per_record``: process CPU per record, warm, tracing off (``TracingBackend`` off); median of
  repeated cycles through the captured batches. ``cpu_ratio``: that over the baseline's.
- ``framework_ms_per_record``: the part of it spent outside botocore's calls (``BaseClient._make_api_call``).
- ``botocore_ms_per_record``: the part inside them (serializing, signing, parsing).
- ``xray_ms_per_record``: CPU per record with X-Ray tracing on (the template's default) less with it off.
- ``traced_cpu_ratio``: CPU per record with tracing on, over the baseline's with tracing on.
- ``cold_start_ms``: CPU time of importing the handler and its first invocation (one record), tracing on
  as the template configures it, in a fresh interpreter; median over rounds. CPU rather than wall time:
  on a machine others share, wall time measures their load as much as the handler (a Lambda sandbox has
  its CPU share to itself, so there wall time follows CPU time). ``cold_start_ratio``: over the
  baseline's. ``cold_start_wall_ms``: the same, on the wall clock. The one record is answered as it was
  when captured (its batch's read), and must publish: a cold record that took another path fails the run.
- ``cold_tool_ms``: of the cold start, the CPU the workflow's tool spent on AWS (making the clients it
  asked ``ToolContext.clients`` for, and its calls through them; execute only).
  ``cold_start_ratio_without_tool``: the cold start less that, over the baseline's: the stage's own cold
  start, as ``cpu_ratio_without_tool`` is its own CPU. ``cold_start_ratio`` keeps the tool's share.
- ``aws_calls_per_record``, ``put_events_calls_per_batch``: the calls one batch made.
- ``tool_calls_per_record``, ``tool_ms_per_record``: of those calls, the ones the workflow's tool made
  through ``ToolContext.clients`` (execute; zero at every other stage), and the CPU inside them (a part
  of ``botocore_ms_per_record``). ``cpu_ratio_without_tool``: CPU per record less the tool's, over the
  baseline's: what the stage itself costs, the workflow's own AWS calls aside. ``cpu_ratio`` keeps them.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.bench.stage_capture import capture

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("validate", "decide", "authorize", "execute", "record")
BASELINE = "baseline"
BATCH_SIZE = 10
"""The template's ``BatchSize`` on every stage queue."""

_LAMBDA = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "ASIABENCHBENCHBENCH",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_SESSION_TOKEN": "bench",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
    "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
    "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
    "_HANDLER": "app.lambda_handler",
}
"""What Lambda sets in every sandbox (credentials are fakes: nothing leaves the process)."""

_TRACED = {"TRACING_BACKEND": "xray"}
_UNTRACED = {"TRACING_BACKEND": "off", "POWERTOOLS_TRACE_DISABLED": "true"}
"""The template's TracingBackend xray (its default) and off."""


def measure_stages(
    *,
    repeats: int = 30,
    warmup: int = 3,
    warm_rounds: int = 3,
    cold_rounds: int = 7,
    capture_path: Path | None = None,
) -> dict[str, dict[str, float]]:
    """Figures by stage and for ``baseline`` (see the module's docstring for the keys).

    Warm figures: each handler runs ``warm_rounds`` times, interleaved with the others; each run's median
    over ``repeats`` batches, and the least of those medians (what other load on the machine added least)."""
    with tempfile.TemporaryDirectory() as scratch:
        captured = capture(capture_path or Path(scratch) / "capture.json")
        specs = {stage: _spec(stage, captured[stage]) for stage in STAGES}
        specs[BASELINE] = _baseline_spec(captured["decide"])
        runs: dict[tuple[str, bool], list[dict[str, float]]] = {}
        for _ in range(warm_rounds):
            for name, spec in specs.items():
                for traced in (False, True):
                    figures_of_run = _run(
                        scratch, spec, mode="warm", traced=traced, repeats=repeats, warmup=warmup
                    )
                    runs.setdefault((name, traced), []).append(figures_of_run)
        figures: dict[str, dict[str, float]] = {}
        for name in specs:
            off = _least(runs[(name, False)])
            on = _least(runs[(name, True)])
            figures[name] = {
                "cpu_ms_per_record": off["cpu_ms_per_record"],
                "framework_ms_per_record": off["framework_ms_per_record"],
                "botocore_ms_per_record": off["botocore_ms_per_record"],
                "traced_cpu_ms_per_record": on["cpu_ms_per_record"],
                "xray_ms_per_record": on["cpu_ms_per_record"] - off["cpu_ms_per_record"],
                "aws_calls_per_record": off["aws_calls_per_batch"] / BATCH_SIZE,
                "put_events_calls_per_batch": off["put_events_calls_per_batch"],
                "tool_calls_per_record": off["tool_calls_per_batch"] / BATCH_SIZE,
                "tool_ms_per_record": off["tool_ms_per_record"],
            }
        cold: dict[str, list[dict[str, float]]] = {name: [] for name in specs}
        for _ in range(cold_rounds):  # interleaved, so drift on a shared machine hits all alike
            for name, spec in specs.items():
                cold[name].append(_run(scratch, spec, mode="cold", traced=True))
    base = figures[BASELINE]
    base_cold = statistics.median(run["cold_start_ms"] for run in cold[BASELINE])
    for name, values in figures.items():
        values["cold_start_ms"] = statistics.median(run["cold_start_ms"] for run in cold[name])
        values["cold_start_wall_ms"] = statistics.median(run["cold_start_wall_ms"] for run in cold[name])
        values["cold_start_ratio"] = values["cold_start_ms"] / base_cold
        values["cold_tool_ms"] = statistics.median(run["cold_tool_ms"] for run in cold[name])
        values["cold_start_ratio_without_tool"] = (
            statistics.median(run["cold_start_ms"] - run["cold_tool_ms"] for run in cold[name]) / base_cold
        )
        values["cpu_ratio"] = values["cpu_ms_per_record"] / base["cpu_ms_per_record"]
        values["cpu_ratio_without_tool"] = (
            values["cpu_ms_per_record"] - values["tool_ms_per_record"]
        ) / base["cpu_ms_per_record"]
        values["traced_cpu_ratio"] = values["traced_cpu_ms_per_record"] / base["traced_cpu_ms_per_record"]
    return {name: {key: round(value, 3) for key, value in values.items()} for name, values in figures.items()}


def _least(runs: list[dict[str, float]]) -> dict[str, float]:
    """The run with the least CPU per record (the one other load on the machine disturbed least)."""
    return min(runs, key=lambda run: run["cpu_ms_per_record"])


def _spec(stage: str, captured: dict[str, Any]) -> dict[str, Any]:
    return {
        "function_name": captured["function_name"],
        "function_arn": captured["function_arn"],
        "code_dir": captured["code_dir"],
        "module": "app",
        "environment": captured["environment"],
        "records": captured["records"],
        "responses": captured["responses"],
    }


def _baseline_spec(like: dict[str, Any]) -> dict[str, Any]:
    spec = _spec(BASELINE, like)
    spec |= {
        "function_name": "intentbus-bench-baseline",
        "code_dir": str(ROOT / "tests" / "bench"),
        "module": "baseline_handler",
        "responses": [],
    }
    spec["environment"] = {**spec["environment"], "POWERTOOLS_SERVICE_NAME": "bench-baseline"}
    return spec


def _run(scratch: str, spec: dict[str, Any], *, mode: str, traced: bool, **more: object) -> dict[str, Any]:
    probe = {
        **spec,
        **more,
        "mode": mode,
        "traced": traced,
        "batch_size": BATCH_SIZE,
        "paths": [str(ROOT / "shared")],
    }
    path, result = Path(scratch) / "probe.json", Path(scratch) / "result.json"
    probe["result_path"] = str(result)
    result.unlink(missing_ok=True)
    path.write_text(json.dumps(probe))
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        **_LAMBDA,
        **spec["environment"],
        **(_TRACED if traced else _UNTRACED),
        "AWS_LAMBDA_FUNCTION_NAME": spec["function_name"],
        "LAMBDA_TASK_ROOT": spec["code_dir"],
    }
    ran = subprocess.run(
        [sys.executable, "-m", "tests.bench.stage_probe", str(path)],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=600,
        check=False,
    )
    if ran.returncode != 0 or not result.exists():
        raise RuntimeError(f"{spec['function_name']} ({mode}) failed: {ran.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(result.read_text())
    if mode == "cold" and "PutEvents" not in figures["cold_operations"]:
        raise RuntimeError(
            f"{spec['function_name']}'s cold record published nothing ({figures['cold_operations']}): "
            "the replay did not answer it as it was answered when captured"
        )
    return figures


def profile_stage(
    stage: str, *, repeats: int = 100, traced: bool = False, sort: str = "tottime", capture_path: Path
) -> str:
    """cProfile's top functions of one warm handler (``stage`` or ``baseline``), as text.

    ``capture_path`` is reused when it exists (a capture takes an incident run), else written."""
    captured = json.loads(capture_path.read_text()) if capture_path.exists() else capture(capture_path)
    spec = _baseline_spec(captured["decide"]) if stage == BASELINE else _spec(stage, captured[stage])
    with tempfile.TemporaryDirectory() as scratch:
        ran = _run(scratch, spec, mode="profile", traced=traced, repeats=repeats, warmup=3, sort=sort)
    return str(ran.get("profile", ""))


def _checkout_key() -> str:
    """This checkout at its commit: a capture made from another checkout or commit names code (the
    function directories, the calls a stage makes) that may no longer be there."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    return hashlib.sha256(f"{ROOT}@{head}".encode()).hexdigest()[:12]


def main(arguments: list[str]) -> int:
    """``python -m tests.bench.stages [profile STAGE [SORT]]``: the figures as JSON, or a stage's profile."""
    import warnings

    warnings.simplefilter("ignore")
    if arguments[:1] == ["profile"] and len(arguments) >= 2:
        sort = arguments[2] if len(arguments) > 2 else "tottime"
        capture_path = Path(tempfile.gettempdir()) / f"intentbus-bench-capture-{_checkout_key()}.json"
        print(profile_stage(arguments[1], sort=sort, capture_path=capture_path))
        return 0
    print(json.dumps(measure_stages(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
