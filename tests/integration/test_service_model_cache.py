"""botocore's data files from the cache on disk: pinned to botocore's source, and every answer the one
botocore's own decoding gives (the same values, in the same order, as the same ``OrderedDict`` types),
from a fresh entry, a kept one, or a damaged one."""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import botocore
import botocore.loaders
import pytest

from intentbus_local import service_model_cache
from intentbus_local.pinning import Pins
from intentbus_local.service_model_cache import cached_service_data

DATA = Path(botocore.__file__).parent / "data"
FILES = [
    "ec2/2016-11-15/service-2",
    "dynamodb/2012-08-10/service-2",
    "endpoints",
    "sqs/2012-11-05/paginators-1",
]


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("INTENTBUS_CACHE_DIR", str(tmp_path))
    return tmp_path


def _shape(value: Any) -> Any:
    """The value with every container's type and order spelled out."""
    if isinstance(value, dict):
        return (type(value).__name__, [(key, _shape(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(item) for item in value])
    return (type(value).__name__, value)


def _botocore_s(name: str) -> Any:
    decode = service_model_cache.PINS.moto_original("JSONFileLoader._load_file")
    loader = botocore.loaders.JSONFileLoader()
    opened: dict[str, Any] = vars(botocore.loaders)["_JSON_OPEN_METHODS"]
    for ext, open_method in opened.items():  # as botocore's load_file
        found = decode(loader, str(DATA / name) + ext, open_method)
        if found is not None:
            return found
    return None


def test_botocore_s_replaced_code_is_the_code_the_cache_was_written_against() -> None:
    assert service_model_cache.PINS.changed() == [], (
        f"botocore changed the code the cache stands in for (found on {service_model_cache.PINS.found_on})"
    )


@pytest.mark.parametrize("name", FILES)
def test_a_file_is_what_botocore_decodes_before_and_after_it_is_kept(
    name: str, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _shape(_botocore_s(name))
    # the test session's own cache (conftest shares service models) is stepped out of
    original = service_model_cache.PINS.moto_original("JSONFileLoader._load_file")
    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "_load_file", original)

    with cached_service_data():
        first = botocore.loaders.JSONFileLoader().load_file(str(DATA / name))
        second = botocore.loaders.JSONFileLoader().load_file(str(DATA / name))

    assert _shape(first) == expected
    assert _shape(second) == expected
    assert type(second) is OrderedDict
    assert first is not second  # each load its own copy, as botocore's
    kept = list((own_cache / service_model_cache.FOLDER).glob("*.pickle"))
    small = name.endswith("paginators-1")
    assert len(kept) == (0 if small else 1)


def test_a_damaged_entry_is_decoded_anew_and_replaced(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "dynamodb/2012-08-10/service-2"
    original = service_model_cache.PINS.moto_original("JSONFileLoader._load_file")
    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "_load_file", original)
    with cached_service_data():
        botocore.loaders.JSONFileLoader().load_file(str(DATA / name))
    (entry,) = (own_cache / service_model_cache.FOLDER).glob("*.pickle")
    entry.write_bytes(b"not a pickle")

    with cached_service_data():
        loaded = botocore.loaders.JSONFileLoader().load_file(str(DATA / name))

    assert _shape(loaded) == _shape(_botocore_s(name))
    assert entry.read_bytes() != b"not a pickle"


def test_a_missing_file_is_none_as_botocore_answers() -> None:
    with cached_service_data():
        assert botocore.loaders.JSONFileLoader().load_file(str(DATA / "no-such-service")) is None


def test_nothing_is_cached_on_a_botocore_whose_code_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    pins = service_model_cache.PINS
    moved = Pins(found_on=pins.found_on, sources=dict.fromkeys(pins.sources, "0" * 16))
    original = pins.moto_original("JSONFileLoader._load_file")
    monkeypatch.setattr(service_model_cache, "PINS", moved)
    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "_load_file", original)

    with pytest.warns(RuntimeWarning, match="_load_file"), cached_service_data():
        assert vars(botocore.loaders.JSONFileLoader)["_load_file"] is original


def test_the_entry_is_keyed_by_the_file_s_bytes() -> None:
    path = str(DATA / "endpoints.json")
    raw = Path(path).read_bytes()

    assert service_model_cache.entry_path(path, raw) != service_model_cache.entry_path(path, raw + b" ")
    assert service_model_cache.entry_path(path, raw).parent.name == service_model_cache.FOLDER
    assert os.fspath(service_model_cache.entry_path(path, raw)).endswith(".pickle")
