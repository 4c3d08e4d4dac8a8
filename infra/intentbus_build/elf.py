"""Which machine a compiled file is for, from its ELF header (no tools, no imports of the file)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from intentbus_build.sizes import files_under

ELF_MAGIC = b"\x7fELF"
_HEADER_BYTES = 20  # e_ident (16), e_type (2), e_machine (2)
_LITTLE_ENDIAN = 1
_BIG_ENDIAN = 2


def machine_of(header: bytes) -> int | None:
    """``e_machine`` of an ELF header (bytes 18-19, in the byte order EI_DATA names); None if not ELF."""
    if len(header) < _HEADER_BYTES or not header.startswith(ELF_MAGIC):
        return None
    if header[5] == _LITTLE_ENDIAN:
        return int.from_bytes(header[18:20], "little")
    if header[5] == _BIG_ENDIAN:
        return int.from_bytes(header[18:20], "big")
    return None


def file_machine(path: Path) -> int | None:
    with path.open("rb") as file:
        return machine_of(file.read(_HEADER_BYTES))


def compiled_files(directory: Path) -> Iterator[tuple[Path, int]]:
    """Every ELF file under ``directory`` (symlinks not followed) with its ``e_machine``."""
    for path in files_under(directory):
        if not path.is_symlink() and (machine := file_machine(path)) is not None:
            yield path, machine
