"""The packed result's base85 is the standard library's, character for character: every stored result
reads back with ``base64.b85decode``, in this version and the ones before it."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus.adapters import base85
from intentbus.adapters.base85 import b85_text

_EDGES = sorted(
    {0, 1, 84, 85, 7224, 7225, 614124, 614125, 52200624, 52200625, 2**20 - 1, 2**20, 2**31, 2**32 - 1}
)


@given(st.binary(max_size=5_000))
def test_any_bytes_encode_as_the_standard_library_encodes_them(data: bytes) -> None:
    assert b85_text(data) == base64.b85encode(data).decode()
    assert base64.b85decode(b85_text(data)) == data


@given(st.lists(st.sampled_from(_EDGES), min_size=1, max_size=40), st.integers(0, 3))
def test_groups_at_every_digit_boundary_and_every_padding(groups: list[int], cut: int) -> None:
    data = struct.pack(f">{len(groups)}I", *groups)
    data = data[: len(data) - cut] if cut < len(data) else data
    assert b85_text(data) == base64.b85encode(data).decode()


@pytest.mark.parametrize(
    ("divisor", "shift", "reciprocal", "below"),
    [
        (7225, base85._SHIFT_GROUP, base85._BY_7225_GROUP, 2**32),
        (7225, base85._SHIFT_THREE, base85._BY_7225_THREE, 85**3),
        (85, base85._SHIFT_PAIR, base85._BY_85_PAIR, 85**2),
    ],
)
def test_each_reciprocal_divides_exactly_below_its_bound(
    divisor: int, shift: int, reciprocal: int, below: int
) -> None:
    """The condition that makes ``(y * M) >> S == y // d`` for every ``y < below`` (see the module)."""
    assert 0 <= reciprocal * divisor - 2**shift < divisor
    assert (below - 1) * (reciprocal * divisor - 2**shift) < 2**shift
    lane_bits = 32 if divisor == 85 else 64  # a pair in a half lane, else a whole lane
    assert (below - 1) * reciprocal < 2**lane_bits


def test_quotients_fit_the_masks_that_keep_them() -> None:
    """A group's three high digits fit the 20 bits the mask keeps (above them the lane above shifts in);
    the ``I`` units a group is copied as are its 4 bytes."""
    assert (2**32 - 1) // 7225 < 2**20
    assert (2**32 - 1) * base85._BY_7225_GROUP < 2**64 <= 2**base85._SHIFT_GROUP * 2**20
    assert memoryview(bytes(8)).cast("I").itemsize == 4


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=300))
def test_whole_groups_anywhere_in_their_range(groups: list[int]) -> None:
    data = struct.pack(f">{len(groups)}I", *groups)
    assert b85_text(data) == base64.b85encode(data).decode()
