"""moto's data files come back from the cache equal to moto's own decoding, and a changed file is a miss."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from moto.utilities import utils

from intentbus_local import moto_resources, template_cache
from intentbus_local.moto_resources import cached_moto_resources

RESOURCES = (
    "ec2/resources/instance_types.json",
    "ec2/resources/instance_type_offerings/region/us-east-1.json",
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(template_cache.CACHE_DIR_ENV, str(folder))
    return folder / moto_resources.FOLDER


def test_a_cached_resource_is_what_moto_decodes_and_the_second_load_does_not_decode(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[str] = []
    original = utils.load_resource

    def counted(resource: str) -> object:
        decoded.append(resource)
        return original(resource)

    monkeypatch.setattr(utils, "load_resource", counted)
    with cached_moto_resources():
        first = [utils.load_resource(resource) for resource in RESOURCES]
        second = [utils.load_resource(resource) for resource in RESOURCES]
    assert decoded == list(RESOURCES)
    assert first == second == [original(resource) for resource in RESOURCES]
    assert first[0] is not second[0], "each load is a fresh value, as moto's (its callers mutate them)"
    assert len(list(cache.glob("*.marshal"))) == len(RESOURCES)
    assert utils.load_resource is counted, "moto's loader is back once the block ends"


def test_a_changed_file_is_decoded_afresh_and_replaces_its_old_entry(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"x/data.json.gz": gzip.compress(b'{"v": 1}')}

    def read(resource: str) -> bytes:
        if resource not in files:
            raise FileNotFoundError(resource)
        return files[resource]

    def decode(resource: str) -> object:
        return json.loads(gzip.decompress(read(f"{resource}.gz")))

    monkeypatch.setattr(utils, "load_resource_as_bytes", read)
    monkeypatch.setattr(utils, "load_resource", decode)
    with cached_moto_resources():
        assert utils.load_resource("x/data.json") == {"v": 1}
        files["x/data.json.gz"] = gzip.compress(b'{"v": 2}')
        assert utils.load_resource("x/data.json") == {"v": 2}
        assert utils.load_resource("x/data.json") == {"v": 2}
    assert len(list(cache.glob("*.marshal"))) == 1


def test_an_unreadable_cache_is_moto_s_own_decoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(template_cache.CACHE_DIR_ENV, str(blocked / "cache"))
    original = utils.load_resource
    with cached_moto_resources():
        assert utils.load_resource(RESOURCES[1]) == original(RESOURCES[1])
