"""``make bench LOAD=10000``: a load run through the local cloud, drawn so a user sees where it backs up.

A producer sends LOAD direct tool calls in waves (``WAVE`` inputs, then ``INVOCATIONS_PER_WAVE``
invocations of the stages) until all are sent, then the local cloud runs until idle. Every stage
queue's depth (visible, in flight and delayed messages) is sampled on the local cloud's clock as it
runs. Each stage's latency is when the invocation that handled a run's message ended, less when the
run's previous step ended (for validate: the input's send), on the local cloud's clock, taken from the
invocations themselves: execute writes no entry in the workflow's log (its durable record is the
idempotency record), so a latency read from the log had no execute step and reported 0 s for it.

``run_load(count)`` returns ``inputs``, ``idle``, ``seconds``, ``inputs_per_second``, ``max_depth``
(stage -> most messages seen in its queue), ``latency_seconds`` (stage -> ``p50``/``p95``/``max``, for
each stage that handled a message: a direct tool call's run never reaches decide) and
``png`` (the plot's path, ``.bench/load-<count>.png``).
``python -m tests.bench.load COUNT`` prints them and writes ``.bench/load.json`` too.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.bench.local_speed import ROOT, quiet, tool_calls

if TYPE_CHECKING:
    from intentbus_local.lambda_runtime import Invocation

WAVE = 100
INVOCATIONS_PER_WAVE = 10
SAMPLE_SECONDS = 0.5
STAGES = ("validate", "decide", "authorize", "execute", "record")


@dataclass
class LoadRun:
    started: float
    sent_at: dict[str, float] = field(default_factory=dict)
    """Run id -> when its input was sent (the local cloud's clock)."""
    depths: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    """(seconds since the start, messages per stage queue)."""
    steps: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: defaultdict(list))
    """Run id -> (when an invocation that handled its message ended, the stage), as they came."""
    latencies: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    """Stage -> (seconds since the start when its invocation ended, latency in seconds)."""


def run_load(count: int, *, out_dir: Path | None = None) -> dict[str, Any]:
    from intentbus_cli.progress import Progress, watch_pipeline
    from intentbus_local.cloud import LocalCloud

    out_dir = out_dir or ROOT / ".bench"
    inputs = tool_calls(count)
    with quiet(), LocalCloud(parameters={"Environment": "dev"}) as cloud:
        run = LoadRun(started=cloud.clock.now())
        last_sample = [float("-inf")]

        def sample(_: Any = None) -> None:
            now = cloud.clock.now()
            if now - last_sample[0] >= SAMPLE_SECONDS:
                last_sample[0] = now
                run.depths.append((now - run.started, cloud.stage_depths()))

        def observe(invocation: Invocation) -> None:
            _note_steps(run, invocation)
            sample()

        cloud.add_observer(observe)
        wall = time.perf_counter()
        with Progress("load run", total=count, unit="inputs done") as progress:
            watch_pipeline(cloud, progress, inputs=count, sent=lambda: len(run.sent_at))
            for start in range(0, count, WAVE):
                wave = [envelope for _, envelope in inputs[start : start + WAVE]]
                cloud.put_events([_entry(envelope) for envelope in wave])
                sent = cloud.clock.now()
                run.sent_at.update((envelope["run_id"], sent) for envelope in wave)
                cloud.run_until_idle(max_invocations=INVOCATIONS_PER_WAVE, raise_on_limit=False)
                sample()
            summary = cloud.run_until_idle(
                max_invocations=40 * count, deadline_seconds=7200, raise_on_limit=False
            )
            if summary.idle:
                progress.update(done=count, detail="")
        seconds = time.perf_counter() - wall
        last_sample[0] = float("-inf")
        sample()
        _latencies(run)
    figures: dict[str, Any] = {
        "inputs": count,
        "idle": summary.idle,
        "seconds": round(seconds, 2),
        "inputs_per_second": round(count / seconds, 2),
        "max_depth": {stage: max(d.get(stage, 0) for _, d in run.depths) for stage in _stages(run)},
        # Only the stages that handled a message: a direct tool call never reaches decide (its run's last
        # outcome goes to no stage), and a latency of 0 would say it went through in no time.
        "latency_seconds": {
            stage: _percentiles(run.latencies[stage]) for stage in _stages(run) if run.latencies.get(stage)
        },
    }
    figures["png"] = str(_draw(run, count, out_dir))
    return figures


def _entry(envelope: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "Source": "intentbus.cli",
        "DetailType": str(envelope["event_type"]),
        "Detail": json.dumps(envelope),
    }


def _note_steps(run: LoadRun, invocation: Invocation) -> None:
    """Each message of a stage's batch that it handled (not failed: a failure is delivered again)."""
    records = invocation.event.get("Records")
    if invocation.error is not None or not isinstance(records, list):
        return  # failed, or not a queue's batch (a scheduled rule's)
    response = invocation.response if isinstance(invocation.response, Mapping) else {}
    failed = {failure.get("itemIdentifier") for failure in response.get("batchItemFailures") or ()}
    ended = invocation.started_at + invocation.duration_seconds
    stage = invocation.function_logical_id.removesuffix("Function").lower()
    for record in records:
        if record.get("messageId") in failed:
            continue
        run_id = json.loads(record["body"]).get("detail", {}).get("run_id")
        if isinstance(run_id, str):
            run.steps[run_id].append((ended, stage))


def _latencies(run: LoadRun) -> None:
    for run_id, sent in run.sent_at.items():
        previous = sent
        for ended, stage in sorted(run.steps.get(run_id, ())):
            run.latencies[stage].append((ended - run.started, max(0.0, ended - previous)))
            previous = ended


def _stages(run: LoadRun) -> list[str]:
    seen = {stage for _, depths in run.depths for stage in depths} | set(run.latencies)
    return [stage for stage in STAGES if stage in seen] + sorted(seen - set(STAGES))


def _percentiles(points: Sequence[tuple[float, float]]) -> dict[str, float]:
    values = sorted(latency for _, latency in points)
    if not values:
        return {"p50": 0.0, "p95": 0.0, "max": 0.0}
    return {
        "p50": round(statistics.median(values), 3),
        "p95": round(values[min(len(values) - 1, int(0.95 * len(values)))], 3),
        "max": round(values[-1], 3),
    }


def _draw(run: LoadRun, count: int, out_dir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (depth_axes, latency_axes) = plt.subplots(2, 1, figsize=(11, 8), sharex=True)
    times = [t for t, _ in run.depths]
    for stage in _stages(run):
        if any(d.get(stage) for _, d in run.depths):
            depth_axes.plot(times, [d.get(stage, 0) for _, d in run.depths], label=stage)
        points = sorted(run.latencies.get(stage, []))
        if points:
            latency_axes.plot(*zip(*_rolling_median(points), strict=True), label=stage)
    depth_axes.set_ylabel("messages in the stage's queue")
    depth_axes.set_title(f"local cloud load run: {count} direct tool calls, sent {WAVE} at a time")
    depth_axes.legend(loc="upper right")
    latency_axes.set_ylabel("stage latency, s (rolling median)")
    latency_axes.set_xlabel("seconds since the first input was sent")
    latency_axes.legend(loc="upper right")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"load-{count}.png"
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def _rolling_median(points: Sequence[tuple[float, float]], window: int = 25) -> list[tuple[float, float]]:
    """The latencies in time order, each the median of the ``window`` around it (a line, not a cloud)."""
    half = window // 2
    latencies = [latency for _, latency in points]
    return [
        (at, statistics.median(latencies[max(0, n - half) : n + half + 1]))
        for n, (at, _) in enumerate(points)
    ]


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit() or int(argv[0]) < 1:
        print(
            "usage: python -m tests.bench.load COUNT (a whole number of inputs, e.g. 10000)", file=sys.stderr
        )
        return 2
    figures = run_load(int(argv[0]))
    print(json.dumps(figures, indent=2))
    (ROOT / ".bench" / "load.json").write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    print(f"plot: {figures['png']}")
    return 0 if figures["idle"] else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
