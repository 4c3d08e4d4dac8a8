"""The collector's thresholds are the local cloud's while one runs, and the process's own after."""

from __future__ import annotations

import gc

from intentbus_local import collector


def test_the_thresholds_are_tuned_while_a_cloud_runs_and_restored_when_the_last_one_stops() -> None:
    own = gc.get_threshold()
    collector.started()
    collector.started()  # a second cloud in the same process
    assert gc.get_threshold() == collector.THRESHOLDS
    collector.stopped()
    assert gc.get_threshold() == collector.THRESHOLDS
    collector.stopped()
    assert gc.get_threshold() == own
    collector.stopped()  # one stop too many changes nothing
    assert gc.get_threshold() == own
