"""``make bench LOAD=N``: the load run draws where the pipeline backs up (a small N here)."""

from __future__ import annotations

from pathlib import Path

from tests.bench.load import run_load

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_a_load_run_applies_every_input_and_draws_each_stage_s_queue_and_latency(tmp_path: Path) -> None:
    figures = run_load(30, out_dir=tmp_path)

    assert figures["idle"]
    png = Path(figures["png"])
    assert png == tmp_path / "load-30.png"
    assert png.read_bytes().startswith(PNG_SIGNATURE)
    assert {"validate", "authorize", "execute", "record"} <= set(figures["max_depth"])
    assert figures["max_depth"]["validate"] >= 10  # a wave waits in validate's queue
    latency = figures["latency_seconds"]
    # a direct tool call's run ends at record: its last outcome goes to no stage, so none to decide
    assert set(latency) == {"validate", "authorize", "execute", "record"}
    assert figures["max_depth"]["decide"] == 0
    assert latency["execute"]["max"] > 0  # execute writes no log entry: measured from its invocations
    for stage, percentiles in latency.items():
        assert 0 <= percentiles["p50"] <= percentiles["p95"] <= percentiles["max"] < 600, stage
    assert figures["inputs_per_second"] > 0
