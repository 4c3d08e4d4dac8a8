"""A template is decoded and translated once per content: an edit is read afresh, never answered stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from intentbus_local import template as template_module
from intentbus_local import template_cache
from intentbus_local.template import default_template_path, read_sam, translate


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(template_cache.CACHE_DIR_ENV, str(folder))
    return folder


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(template_module, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(template_module, name, counted)
    return calls


def test_the_second_read_of_a_template_is_the_first_s_answer_without_decoding_or_translating(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded, translated = _counting(monkeypatch, "_decoded"), _counting(monkeypatch, "_translated")
    path = default_template_path()

    first = translate(read_sam(path), region="us-east-1")
    second = translate(read_sam(path), region="us-east-1")

    assert second == first
    assert (len(decoded), len(translated)) == (1, 1)
    assert "Resources" in first
    translate(read_sam(path), region="eu-west-1")  # the region is part of the key
    assert len(translated) == 2


def test_a_change_to_how_the_local_cloud_rewrites_a_template_is_translated_afresh(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cached translation carries this package's rewriting (code locations, managed policies): an
    edit of it must not be served the translation the previous code made."""
    translated = _counting(monkeypatch, "_translated")
    sam = read_sam(default_template_path())
    translate(sam, region="us-east-1")
    monkeypatch.setattr(template_module, "_own_digest", lambda: "another version of template.py")

    translate(sam, region="us-east-1")

    assert len(translated) == 2


def test_an_edited_template_is_read_afresh(cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(default_template_path().read_text().replace("Description: >-", "Notes: >-", 1))
    before = read_sam(path)

    path.write_text(path.read_text().replace("Transform:", "Description: edited\nTransform:", 1))

    assert read_sam(path) == {**before, "Description": "edited"}


def test_a_damaged_entry_is_computed_again_and_an_unwritable_folder_only_costs_time(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = default_template_path()
    expected = read_sam(path)
    for entry in cache.iterdir():
        entry.write_text("{not json")

    assert read_sam(path) == expected

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv(template_cache.CACHE_DIR_ENV, str(blocked / "cache"))
    assert read_sam(path) == expected


def test_only_the_newest_entries_are_kept(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(template_cache, "KEPT_ENTRIES", 2)
    for number in range(4):
        template_cache.cached_json("step", "pytest", str(number), lambda: {"n": 1})

    assert len(list(cache.glob("*.json"))) == 2
