"""A stored result, packed by this version, reads back as the versions before it read it, and theirs read
back here: the idempotency records of a command stay readable across a deploy and a rollback."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

import pytest

from intentbus.adapters.compression import compressed
from intentbus.adapters.idempotency import PACKED, _packed, _unpacked
from tests.command_envelopes import command_envelope


def _results() -> list[dict[str, Any]]:
    plain = command_envelope("k1").to_json_dict()
    wide = command_envelope("k2", payload={"note": "café ✓ 日本", "ratio": 0.1, "big": 10**20}).to_json_dict()
    lone = command_envelope("k3", payload={"text": "\ud800 alone"}).to_json_dict()
    return [plain, wide, lone]


def _read_as_before(stored: dict[str, Any]) -> Any:
    """What the versions before this one did with a packed result."""
    return json.loads(zlib.decompress(base64.b85decode(stored[PACKED])))


def _packed_as_before(result: dict[str, Any]) -> dict[str, Any]:
    plain = json.dumps(result, separators=(",", ":")).encode()
    return {PACKED: base64.b85encode(compressed(plain)).decode()}


@pytest.mark.parametrize("result", _results())
def test_a_packed_result_reads_back_the_same_here_and_in_the_versions_before(result: dict[str, Any]) -> None:
    stored = json.loads(json.dumps(_packed(result)))  # as Powertools stores and reads it

    assert set(stored) == {PACKED}
    assert _unpacked(stored) == result
    assert _read_as_before(stored) == result


@pytest.mark.parametrize("result", _results())
def test_a_result_packed_before_reads_back_here(result: dict[str, Any]) -> None:
    assert _unpacked(_packed_as_before(result)) == result


@pytest.mark.parametrize("result", _results())
def test_a_packed_result_is_stored_as_before(result: dict[str, Any]) -> None:
    """The same JSON text, so the same bytes: the same write units."""
    assert _packed(result) == _packed_as_before(result)
