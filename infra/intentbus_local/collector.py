"""Python's cyclic garbage collector, tuned while a local cloud runs.

A local run allocates millions of short-lived objects (moto's requests and responses, expression
trees, deep copies of events and messages) over a heap that keeps growing (every table's items, every
queue's messages). With CPython's default thresholds (700, 10, 10) a 400-input run made about 1,100
young collections and 8 full ones, each full one walking the whole heap: 3.8 s of a 66 s run on a busy
machine. With ``THRESHOLDS`` it made about 40 young ones and no full one (0.7 s). Garbage is still
collected, in bigger batches. The process's own thresholds are back once the last cloud closes.
"""

from __future__ import annotations

import gc

THRESHOLDS = (20_000, 20, 20)
_saved: list[tuple[int, ...]] = []
"""The thresholds found when the first running cloud started; empty when none runs."""
_running = [0]


def started() -> None:
    if _running[0] == 0:
        _saved[:] = [gc.get_threshold()]
        gc.set_threshold(*THRESHOLDS)
    _running[0] += 1


def stopped() -> None:
    if _running[0] == 0:
        return
    _running[0] -= 1
    if _running[0] == 0 and _saved:
        gc.set_threshold(*_saved.pop())
