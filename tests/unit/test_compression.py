"""Stored JSON's compression: read back by plain ``zlib.decompress``, as every version reads it."""

from __future__ import annotations

import json
import zlib

from hypothesis import given
from hypothesis import strategies as st

from intentbus.adapters.compression import compressed
from tests.command_envelopes import command_envelope


@given(st.binary(max_size=20_000))
def test_whatever_is_compressed_decompresses_to_itself(data: bytes) -> None:
    assert zlib.decompress(compressed(data)) == data


def test_an_entry_sized_text_is_written_as_the_smaller_memory_level_wrote_it() -> None:
    """Entries written before and after the memory level changed are the same bytes (same size, same
    write units), not only the same text once read."""
    outputs = [command_envelope(f"k{index}", id=f"cmd-{index}").to_json_dict() for index in range(3)]
    text = json.dumps({"stage": "decide", "outputs": outputs}, separators=(",", ":")).encode()
    before = zlib.compressobj(6, zlib.DEFLATED, 12, 4)

    assert 1_000 < len(text) < 4_000
    assert compressed(text) == before.compress(text) + before.flush()
