"""The digests authorize records and execute and record compare: the same bytes as every earlier version
wrote, however the command's canonical JSON is built."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus.envelope import Envelope, Kind
from intentbus.extensions import TRACE_CONTEXT
from intentbus.facts import CommandAuthorized
from intentbus.ids import canonical_json, canonical_json_less, digest
from intentbus.limits import json_bytes
from intentbus.policy import Effect, Verdict
from intentbus.stages.common import authorization_digest, authorization_for, fact_digest

AT = datetime(2026, 1, 1, 12, 31, tzinfo=UTC)
TRACED = {
    "traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01",
    "tracestate": "vendor=1",
    "extensions": {"zz": "x"},
}


def command(**fields: Any) -> Envelope:
    return Envelope(
        id="cmd-1",
        source="intentbus.pipeline",
        type="crm.update_contact",
        time=datetime(2026, 1, 1, 12, 30, tzinfo=UTC),
        kind=Kind.COMMAND,
        tenant_id="acme",
        trace_id="tr-1",
        run_id="run-1",
        step_index=2,
        correlation_id="run-1",
        causation_id="evt-1",
        payload={"contact": "Zoë", "fields": {"b": [1, 2.5, None], "a": True}, "note": "ünïcödé ✓"},
        **fields,
    )


def authorized(of: Envelope) -> Envelope:
    return of.follow(
        stage="authorize",
        type="CommandAuthorized",
        kind=Kind.EVENT,
        payload={},
        time=AT,
        source="intentbus.pipeline",
    )


# Written by the version before the command was encoded once for both digests: stored authorizations
# must still match what execute's guard and record compute.
@pytest.mark.parametrize(
    ("fields", "resource_version", "expected_digest", "expected_command_digest"),
    [
        (
            {},
            None,
            "9b447c6dfc7f34eddb718c72d31fc0bacf89abe27d7b3a38c8d9606e2277f17e",
            "5689e01e88161d90944a509024973c4e76a28a021bb42e724b5f35976528a096",
        ),
        (
            TRACED,
            7,
            "a09f53f7afbb22ecf3d9097deb5bc958802eb6636db0ac9d133d912ea5503e8e",
            "ac9872f091161d723d536f8984a9873283ff86e61999c959804eed8ea39f6202",
        ),
    ],
)
def test_an_authorizations_digests_are_those_earlier_versions_stored(
    fields: dict[str, Any], resource_version: int | None, expected_digest: str, expected_command_digest: str
) -> None:
    cmd = command(**fields)
    fact = authorized(cmd)
    granted = authorization_for(fact, cmd, resource_version, by="authorize", at=AT)
    assert (granted.digest, granted.command_digest) == (expected_digest, expected_command_digest)
    assert granted.digest == authorization_digest(fact.id, cmd, resource_version)
    assert granted.command_digest == fact_digest(cmd)


_text = st.text(st.characters(codec="utf-8"), max_size=12)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=10,
)


_any_values = st.recursive(
    _values | st.floats() | st.datetimes() | st.decimals(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3).map(tuple) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=10,
)
"""JSON's values, and others that encode as their ``str``."""


@given(value=_any_values)
def test_canonical_json_is_what_json_dumps_writes(value: Any) -> None:
    """The encoder made once writes what ``json.dumps`` with the same options writes, byte for byte."""
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    assert canonical_json(value) == expected


@given(value=_any_values)
def test_json_bytes_is_the_size_json_dumps_writes(value: Any) -> None:
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    assert json_bytes(value) == len(expected.encode())


def test_canonical_json_refuses_a_value_that_contains_itself() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    with pytest.raises(RecursionError):
        canonical_json(looped)


@given(
    content=st.dictionaries(_text | st.sampled_from(sorted(TRACE_CONTEXT)), _values, max_size=8),
    left_out=st.frozensets(_text | st.sampled_from(sorted(TRACE_CONTEXT)), max_size=3),
)
def test_canonical_json_less_is_the_canonical_json_of_both(
    content: dict[str, Any], left_out: frozenset[str]
) -> None:
    kept = {name: value for name, value in content.items() if name not in left_out}
    assert canonical_json_less(content, left_out) == (canonical_json(content), canonical_json(kept))


@pytest.mark.parametrize(
    ("content", "left_out"),
    [
        ({}, frozenset({"tracestate"})),
        ({"traceparent": None}, frozenset({"traceparent"})),
        ({"traceparent": None, "tracestate": "a"}, TRACE_CONTEXT),
        ({"a": 1, "traceparent": None, "tracestate": None}, TRACE_CONTEXT),
        ({"traceparent": 1, "z": {"traceparent": None, "tracestate": None}}, TRACE_CONTEXT),
        ({"a": {"traceparent": "x"}, "tracestate": "y", "type": "t", "version": 2}, TRACE_CONTEXT),
        ({"a": 1, "b": 2}, TRACE_CONTEXT),
        ({"b": 1, "a": '"tracestate":null,', "tracestate": None}, frozenset({"tracestate", "zz"})),
        (command(**TRACED).to_json_dict(), TRACE_CONTEXT),
        (command().to_json_dict(), TRACE_CONTEXT),
    ],
)
def test_canonical_json_less_where_the_keys_left_out_fall(
    content: dict[str, Any], left_out: frozenset[str]
) -> None:
    """First, last, all or none of the keys left out; nested keys of the same names; an envelope."""
    kept = {name: value for name, value in content.items() if name not in left_out}
    assert canonical_json_less(content, left_out) == (canonical_json(content), canonical_json(kept))


@given(
    traceparent=st.none() | st.just(TRACED["traceparent"]),
    tracestate=st.none() | _text,
    payload=st.dictionaries(_text, _values, max_size=4),
    resource_version=st.none() | st.integers(min_value=0, max_value=2**40),
)
def test_an_authorization_digests_what_execute_and_record_compare(
    traceparent: str | None, tracestate: str | None, payload: dict[str, Any], resource_version: int | None
) -> None:
    cmd = command(traceparent=traceparent, tracestate=tracestate).model_copy(update={"payload": payload})
    fact = authorized(cmd)
    granted = authorization_for(fact, cmd, resource_version, by="authorize", at=AT)
    assert granted.digest == authorization_digest(fact.id, cmd, resource_version)
    assert granted.command_digest == fact_digest(cmd)
    # authorize hands over the command as its CommandAuthorized payload dumped it
    verdict = Verdict(effect=Effect.ALLOW, rule="r", reason="ok")
    fact_payload = CommandAuthorized(command=cmd, verdict=verdict, resource_version=resource_version)
    dumped = fact_payload.model_dump(mode="json")["command"]
    assert authorization_for(fact, cmd, resource_version, by="authorize", at=AT, dumped=dumped) == granted


def test_the_canonical_encoder_writes_what_json_dumps_with_its_options_writes() -> None:
    value = {"é": [1, 2.5, None, True], "a": {"z": "✓", "b": datetime(2026, 1, 1, tzinfo=UTC)}}
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    assert canonical_json(value) == expected
    assert digest(value) == hashlib.sha256(expected.encode()).hexdigest()
