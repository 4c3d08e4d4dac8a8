"""The stage probe starts each batch without what earlier inputs left in the library's per-input caches:
a renamed or removed cache must fail here, not quietly make every warm figure a replay's."""

from __future__ import annotations

import importlib

import pytest

from intentbus.ids import derive_id
from tests.bench.stage_probe import PER_INPUT_CACHES, _forget_earlier_inputs


@pytest.mark.parametrize(("module_name", "name"), PER_INPUT_CACHES)
def test_each_named_cache_exists_and_is_emptied(module_name: str, name: str) -> None:
    cached = getattr(importlib.import_module(module_name), name)
    _forget_earlier_inputs()
    assert cached.cache_info().currsize == 0


def test_an_input_derived_before_is_derived_again() -> None:
    cached = importlib.import_module("intentbus.ids")._uuid5
    derive_id("evt-probe", "decide", 0)
    _forget_earlier_inputs()  # empties the cache and its counts
    derive_id("evt-probe", "decide", 0)
    assert (cached.cache_info().hits, cached.cache_info().misses) == (0, 1)
