"""The boto3 version Powertools' DynamoDB layer is given while boto3 is not imported: read from boto3's source
line, the very value ``boto3.__version__`` has, falling back to the distribution's metadata."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import boto3
import pytest

from intentbus.adapters import powertools_idempotency
from intentbus.adapters.powertools_idempotency import boto3_version, version_in_source


def test_the_version_is_the_one_boto3_has() -> None:
    assert boto3_version() == boto3.__version__


def test_the_source_is_read_not_the_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_looked_up(name: str) -> str:
        raise AssertionError(f"the metadata of {name} was looked up")

    monkeypatch.setattr(importlib.metadata, "version", not_looked_up)

    assert boto3_version() == boto3.__version__


def test_without_a_version_line_the_metadata_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(powertools_idempotency, "version_in_source", lambda path: None)

    assert boto3_version() == importlib.metadata.version("boto3")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("'''Doc.'''\nimport logging\n__version__ = '1.44.8'\n", "1.44.8"),
        ('__version__ = "2.0.1"  \n', "2.0.1"),
        ("import x\n\n__version__ = x.version\n", None),
        ("__version__ = ''\n", None),
        ("    __version__ = '9'\nVERSION = '1'\n", None),
        ("", None),
    ],
)
def test_the_version_line(tmp_path: Path, text: str, expected: str | None) -> None:
    source = tmp_path / "module.py"
    source.write_text(text)

    assert version_in_source(str(source)) == expected


def test_an_unreadable_source_has_no_version(tmp_path: Path) -> None:
    assert version_in_source(str(tmp_path / "missing.py")) is None
    (tmp_path / "latin.py").write_bytes(b"# \xff\n__version__ = '1'\n")
    assert version_in_source(str(tmp_path / "latin.py")) is None
