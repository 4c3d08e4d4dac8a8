"""The derived ids' text is ``uuid.uuid5``'s, byte for byte: every id the pipeline ever derived (dedup keys,
run ids, output ids) must come out the same after an upgrade, or a redelivered input would not be known."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus.ids import INTENTBUS_NAMESPACE, derive_id, uuid5_text


def _uuid5(name: str) -> str:
    return str(uuid.uuid5(INTENTBUS_NAMESPACE, name))


@given(st.text())
def test_any_name_derives_uuid5s_text(name: str) -> None:
    try:
        expected = _uuid5(name)
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            uuid5_text(name)
        return
    assert uuid5_text(name) == expected


@pytest.mark.parametrize(
    "name",
    ["", "input:t1:crm:evt-1", "évènement:💥", "x" * 5000, "evt-1:decide:0", "\x00"],
)
def test_known_names(name: str) -> None:
    assert uuid5_text(name) == _uuid5(name)
    parsed = uuid.UUID(uuid5_text(name))
    assert (parsed.version, parsed.variant) == (5, uuid.RFC_4122)


def test_a_lone_surrogate_is_refused_as_uuid5_refuses_it() -> None:
    with pytest.raises(UnicodeEncodeError):
        _uuid5("\ud800")
    with pytest.raises(UnicodeEncodeError):
        derive_id("evt", "\ud800")


def test_a_pinned_id_never_changes() -> None:
    """An id already stored in deployed tables: the derivation is fixed forever."""
    assert derive_id("evt-1", "decide", 0) == "080feca7-52fc-5d76-ab8f-58af33aa5082"
