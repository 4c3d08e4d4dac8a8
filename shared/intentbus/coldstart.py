"""A Lambda entry's imports, and what its first invocation builds once, without the cyclic garbage collector.

Building the layer's pydantic models allocates enough container objects to set off the collector's
full passes over everything imported so far, repeatedly, though almost none of it is garbage: a few
tens of milliseconds of a cold start. With the collector paused for the imports, and what they built
then frozen (``gc.freeze``: kept out of every later pass), neither the imports nor the records after
them walk it again. The price: what little garbage the imports left is never collected. Frozen once per
process (the local cloud imports many entries into one).

The first invocation builds more that lives as long as the sandbox: the stage's core (the workflows it
imports, its idempotency layer), each AWS client (botocore's models and endpoint data, some tens of
thousands of objects), the payload models its first records validate. ``building()`` pauses the
collector for those too, without freezing them: the local cloud and tests build cores and clients over
and over in one process. ``first_call_building`` pauses it for a handler's whole first invocation and
then freezes what is there, once per process as the imports: else the collector's first pass after the
pause walks all of it, still inside the cold start.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

Params = ParamSpec("Params")
Result = TypeVar("Result")

_frozen = False
_first_call_frozen = False


@contextmanager
def importing() -> Iterator[None]:
    global _frozen  # noqa: PLW0603 - once per process
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not _frozen:
            gc.freeze()
            _frozen = True
        if enabled:
            gc.enable()


@contextmanager
def building() -> Iterator[None]:
    """The collector paused while the block builds what the sandbox keeps (nested blocks: the outermost
    gives it back)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def first_call_building(entry: Callable[Params, Result]) -> Callable[Params, Result]:
    """``entry``, its first call under ``building()`` and what it built then frozen (once per process);
    every later call as it is."""
    first = True

    @functools.wraps(entry)
    def call(*args: Params.args, **kwargs: Params.kwargs) -> Result:
        nonlocal first
        if not first:
            return entry(*args, **kwargs)
        first = False
        with building():
            try:
                return entry(*args, **kwargs)
            finally:
                _freeze_once()

    return call


def _freeze_once() -> None:
    global _first_call_frozen  # noqa: PLW0603 - once per process
    if not _first_call_frozen:
        gc.freeze()
        _first_call_frozen = True
