"""A stored result, packed by this version, reads back here, and the versions before it read back here: the
idempotency records of a command stay readable across a deploy. Text stores (Redis) keep the text the
versions before kept, so a rollback reads theirs; DynamoDB keeps the bytes that text stood for (a binary
attribute), which the versions before this one cannot read."""

from __future__ import annotations

import base64
import json
import zlib
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus import facts
from intentbus.adapters.compression import compressed
from intentbus.adapters.idempotency import PACKED, _packed, _packed_bytes, _unpacked
from intentbus.envelope import Envelope, Kind
from intentbus.execution_claim import MadeOutput
from intentbus.stages.execute import payload_json
from tests.command_envelopes import command_envelope
from tests.fuzz.support import json_values


def _envelopes() -> list[Envelope]:
    plain = command_envelope("k1")
    wide = command_envelope("k2", payload={"note": "café ✓ 日本", "ratio": 0.1, "big": 10**20})
    lone = command_envelope("k3", payload={"text": "\ud800 alone"})
    return [plain, wide, lone]


def _results() -> list[dict[str, Any]]:
    return [envelope.to_json_dict() for envelope in _envelopes()]


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
def test_a_result_packed_as_bytes_is_the_bytes_the_text_stood_for_and_reads_back(
    result: dict[str, Any],
) -> None:
    packed = _packed_bytes(result)

    assert set(packed) == {PACKED}
    assert packed[PACKED] == base64.b85decode(_packed_as_before(result)[PACKED])
    assert _unpacked(packed) == result
    assert _unpacked(_packed(result)) == result


@pytest.mark.parametrize("result", _results())
def test_a_packed_result_is_stored_as_before(result: dict[str, Any]) -> None:
    """The same JSON text, so the same bytes: the same write units."""
    assert _packed(result) == _packed_as_before(result)


@pytest.mark.parametrize("envelope", _envelopes())
def test_an_output_an_attempt_made_is_stored_as_before(envelope: Envelope) -> None:
    """Packed from its envelope's JSON text (ASCII), else from the dict: the bytes stored before."""
    made = MadeOutput(envelope)

    assert made == envelope.to_json_dict()
    assert _packed(made) == _packed_as_before(envelope.to_json_dict())


@given(
    payload=st.dictionaries(st.text(max_size=8), json_values, max_size=4)
    | st.just({"small": 1e-7, "huge": 1e300, "zero": -0.0, "controls": 'a\x00\x1f\n\t"\\/<>&'})
)
def test_an_output_made_here_is_packed_as_its_dict_is(payload: dict[str, Any]) -> None:
    """Any payload: an envelope's JSON text is its ``to_json_dict`` as pydantic-core writes that, when
    ASCII (floats, escapes and all); any other is packed from the dict, as every result was."""
    envelope = command_envelope("k", payload=payload)

    assert _packed(MadeOutput(envelope)) == _packed(envelope.to_json_dict())


_FACTS = st.one_of(
    st.builds(
        lambda result, reconciled: (
            facts.COMMAND_EXECUTED,
            facts.CommandExecuted,
            {"result": result, "reconciled": reconciled},
        ),
        st.dictionaries(st.text(max_size=8), json_values, max_size=4)
        | st.just({"small": 1e-7, "huge": 1e300, "zero": -0.0, "lone": "\ud800", "big": 10**20}),
        st.booleans(),
    ),
    st.builds(lambda reason: (facts.COMMAND_SKIPPED, facts.CommandSkipped, {"reason": reason}), st.text()),
    st.builds(
        lambda holder, version: (
            facts.COMMAND_CONFLICTED,
            facts.CommandConflicted,
            {"resource": "svc", "authorized_at_version": version, "holder": holder, "reason": "moved"},
        ),
        st.none() | st.text(max_size=8),
        st.integers(0, 2**40),
    ),
)


@given(made=_FACTS, command_payload=st.dictionaries(st.text(max_size=8), json_values, max_size=3))
def test_an_output_made_with_its_json_payload_is_the_dump_of_its_envelope(
    made: tuple[str, Any, dict[str, Any]], command_payload: dict[str, Any]
) -> None:
    """Execute's facts (``payload_json``'s payload) taken as they are: the very ``to_json_dict``, key for key
    and in order, so stored and published as before."""
    fact_type, model, fields = made
    incoming = command_envelope("in", payload={"ignored": True})
    command = command_envelope("k", payload=command_payload)
    payload = model(command=command, **fields)
    output = incoming.follow(
        stage="execute",
        type=fact_type,
        kind=Kind.EVENT,
        time=datetime(2026, 12, 6, tzinfo=UTC),
        source=facts.PIPELINE_SOURCE,
        payload=payload_json(payload, command.to_json_dict()),
    )

    fast, dumped = MadeOutput(output, json_payload=True), output.to_json_dict()

    assert list(fast.items()) == list(dumped.items())
    assert json.dumps(fast) == json.dumps(dumped)
    assert _packed(fast) == _packed(dumped)
