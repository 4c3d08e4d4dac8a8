"""On a moto whose code moved under a replacement (a newer moto than ``constraints.txt`` names), the local
cloud keeps moto's own code and says so once, rather than running a copy of code moto no longer has."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from intentbus_local import attribute_parse, direct_calls, response_keys
from intentbus_local.backend import InProcessMoto
from intentbus_local.pinning import Pins


def _moved(pins: Pins) -> Pins:
    """The same pins, as if every source had changed since they were taken."""
    return Pins(found_on=pins.found_on, sources=dict.fromkeys(pins.sources, "0" * 16))


def test_the_pins_hold_on_the_moto_and_botocore_this_checkout_names() -> None:
    assert response_keys.PINS.holds()
    assert direct_calls.PINS.holds()
    assert direct_calls.BOTOCORE_PINS.holds()
    assert attribute_parse.PINS.holds()
    assert attribute_parse.MOTO_PINS.holds()


def test_a_replacement_whose_moto_code_moved_is_not_installed_and_says_which(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    moved = _moved(response_keys.PINS)
    monkeypatch.setattr(response_keys, "PINS", moved)

    with pytest.warns(RuntimeWarning, match=r"ResponseSerializer\.get_value.*not the code found on 5\.2\.\d"):
        response_keys.apply()

    assert moved.replaced == {}
    assert not moved.holds()  # checked once: no second warning, still not installed


@pytest.fixture
def sqs_with_moved_direct_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setattr(direct_calls, "PINS", _moved(direct_calls.PINS))
    direct_calls._pins_hold.cache_clear()
    backend = InProcessMoto()
    backend.start()
    try:
        yield boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        ).client("sqs")
    finally:
        backend.stop()
        direct_calls._pins_hold.cache_clear()


def test_calls_go_over_http_when_the_copied_code_moved(
    sqs_with_moved_direct_path: Any,
) -> None:
    sqs = sqs_with_moved_direct_path
    sent: list[str] = []
    sqs.meta.events.register_first("before-send", lambda request, **_: sent.append(request.url))

    with pytest.warns(RuntimeWarning, match="the library's own code is used instead"):
        url = sqs.create_queue(QueueName="over-http")["QueueUrl"]

    assert len(sent) == 1
    assert url.endswith("/over-http")


def test_attribute_values_are_parsed_by_the_libraries_own_code_when_it_moved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moto.core import parse

    monkeypatch.setitem(parse.PROTOCOL_PARSERS, "json", parse.JSONParser)
    monkeypatch.setattr(attribute_parse, "MOTO_PINS", _moved(attribute_parse.MOTO_PINS))
    monkeypatch.setattr(attribute_parse, "PINS", _moved(attribute_parse.PINS))
    attribute_parse.holds.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="the library's own code is used instead"):
            attribute_parse.apply()
        with pytest.warns(RuntimeWarning, match="the library's own code is used instead"):
            assert not attribute_parse.holds()
    finally:
        attribute_parse.holds.cache_clear()
    assert parse.PROTOCOL_PARSERS["json"] is parse.JSONParser
