"""How big an artifact is, unzipped and as the .zip that would be uploaded."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator
from pathlib import Path


class _CountingSink:
    """A write-only stream that keeps only the number of bytes written (zipfile handles no tell())."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> int:
        self.written += len(data)
        return len(data)

    def flush(self) -> None:
        pass


def files_under(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            yield Path(root) / name


def unzipped_bytes(directory: Path) -> int:
    return sum(path.lstat().st_size for path in files_under(directory))


def zipped_bytes(directory: Path) -> int:
    """Deflated, as sam package zips it."""
    sink = _CountingSink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:  # type: ignore[call-overload]
        for path in files_under(directory):
            archive.write(path, path.relative_to(directory).as_posix())
    return sink.written
