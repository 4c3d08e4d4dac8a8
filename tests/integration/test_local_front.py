"""The local front's own checks over real HTTP: the session token, the Origin, the Host. No cloud is
needed: a refused request never reaches a function, and an admitted one reaches this recorder."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import pytest

from intentbus_local.http_front import HttpFront, LocalUser
from intentbus_local.template import load_template

PATH = "/v1/tenants/acme/approvals/7d1e4a0c-1d9a-4a8e-9a51-3b1f6f0f2a11/approve"


class Recorder:
    def __init__(self) -> None:
        self.events: list[Mapping[str, Any]] = []

    def __call__(self, function: str, event: Mapping[str, Any]) -> dict[str, Any]:
        self.events.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}


@pytest.fixture(scope="module")
def front() -> Iterator[tuple[HttpFront, Recorder]]:
    recorder = Recorder()
    served = HttpFront(
        load_template(), recorder, LocalUser(email="ann@acme.example", tenant_id="acme"), lambda: 0.0
    )
    try:
        yield served, recorder
    finally:
        served.close()


def post(front: HttpFront, headers: dict[str, str], path: str = PATH) -> int:
    where = urlsplit(front.url)
    connection = http.client.HTTPConnection(str(where.hostname), where.port, timeout=10)
    try:
        connection.request("POST", path, body=json.dumps({"reason": "x"}), headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_without_the_session_token_nothing_is_invoked(front: tuple[HttpFront, Recorder]) -> None:
    """Attack: POST approve to the front with no token, a guessed one, or a forged Cognito-like JWT
    whose claims name another tenant."""
    api, recorder = front
    before = len(recorder.events)
    forged = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4IiwiY3VzdG9tOnRlbmFudF9pZCI6ImFjbWUifQ."
    for headers in ({}, {"Authorization": "guess"}, {"Authorization": forged}):
        assert post(api, headers) == 401
    assert len(recorder.events) == before


def test_the_session_token_admits_the_front_user(front: tuple[HttpFront, Recorder]) -> None:
    api, recorder = front
    assert post(api, {"Authorization": api.session_token}) == 200
    assert post(api, {"Authorization": f"Bearer {api.session_token}"}) == 200
    claims = recorder.events[-1]["requestContext"]["authorizer"]["claims"]
    assert claims["custom:tenant_id"] == "acme"
    assert claims["cognito:groups"] == "approvers"


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:1"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Host": "evil.example"},
    ],
)
def test_another_origin_or_host_is_refused_even_with_the_token(
    front: tuple[HttpFront, Recorder], headers: dict[str, str]
) -> None:
    """Attack: a page of another origin (or a rebound DNS name) that somehow holds the token posts."""
    api, recorder = front
    before = len(recorder.events)
    assert post(api, {"Authorization": api.session_token, **headers}) == 403
    assert len(recorder.events) == before


def test_the_console_url_carries_the_token_in_its_fragment(front: tuple[HttpFront, Recorder]) -> None:
    api, _ = front
    url = api.console_url("acme")
    assert url == f"{api.url}/v1/console?tenant=acme#token={api.session_token}"
    assert len(api.session_token) >= 40
