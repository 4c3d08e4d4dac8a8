"""Stored JSON's compression: read back by plain ``zlib.decompress``, as every version reads it."""

from __future__ import annotations

import json
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus.adapters.compression import MEMORY_LEVEL, compressed
from tests.command_envelopes import command_envelope


@given(st.binary(max_size=20_000))
def test_whatever_is_compressed_decompresses_to_itself(data: bytes) -> None:
    assert zlib.decompress(compressed(data)) == data


def _written_at(memory_level: int, text: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 12, memory_level)
    return packer.compress(text) + packer.flush()


def test_an_entry_sized_text_is_written_as_the_smaller_memory_level_wrote_it() -> None:
    """Entries written before and after the memory level changed are the same bytes (same size, same
    write units), not only the same text once read."""
    outputs = [command_envelope(f"k{index}", id=f"cmd-{index}").to_json_dict() for index in range(3)]
    text = json.dumps({"stage": "decide", "outputs": outputs}, separators=(",", ":")).encode()

    assert 1_000 < len(text) < 4_000
    assert compressed(text) == _written_at(4, text)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("stage", ["validate", "decide", "record"])
def test_entries_of_every_size_a_stage_writes_are_the_bytes_the_default_memory_level_wrote(
    count: int, stage: str
) -> None:
    """Memory level 7 (half the state of zlib's default 8 to allocate and clear) writes, for entries of
    the sizes the stages write (0.5-2.2 KB), the very bytes level 8 wrote."""
    outputs = [command_envelope(f"k{index}", id=f"cmd-{index}").to_json_dict() for index in range(count)]
    entry = {"stage": stage, "summary": {"reason": "x" * count}, "outputs": outputs}
    text = json.dumps(entry, separators=(",", ":")).encode()

    assert 400 < len(text) < 2_300
    assert MEMORY_LEVEL == 7
    assert compressed(text) == _written_at(8, text)
