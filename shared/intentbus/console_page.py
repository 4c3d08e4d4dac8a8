"""The approvals console: one static page, served with a CSP that lets exactly its own script and style run.

The page's sign-in (a Cognito user pool domain and app client, for the authorization code flow with
PKCE) comes from the API stage's variables; without them, as on the local front, the page takes the
front's session token from its URL fragment instead.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

SIGN_IN_MARKER = "{{sign_in}}"
_DOMAIN = re.compile(r"^[a-z0-9][a-z0-9.\-]{0,252}[a-z0-9]$")
_CLIENT_ID = re.compile(r"^[A-Za-z0-9]{1,128}$")

API_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
}
"""Sent with every answer of the API, the page's included (which replaces the CSP with its own)."""


@dataclass(frozen=True)
class SignIn:
    """The Cognito hosted UI the console signs in with (from the API stage's variables)."""

    domain: str
    """The user pool's hosted UI host, e.g. ``intentbus-….auth.eu-west-1.amazoncognito.com``."""
    client_id: str

    @classmethod
    def from_stage(cls, variables: dict[str, Any] | None) -> SignIn | None:
        domain = str((variables or {}).get("signInDomain") or "")
        client_id = str((variables or {}).get("consoleClientId") or "")
        if _DOMAIN.match(domain) and _CLIENT_ID.match(client_id):
            return cls(domain, client_id)
        return None


@cache
def _source() -> str:
    return resources.files("intentbus.console").joinpath("index.html").read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@cache
def hashes() -> tuple[str, str]:
    """The CSP hashes of the page's one inline script and one inline style."""
    source = _source()
    script = re.search(r"<script>(.*?)</script>", source, re.S)
    style = re.search(r"<style>(.*?)</style>", source, re.S)
    if script is None or style is None:
        raise ValueError("the console page needs its one inline <script> and one <style>")
    return _sha256(script.group(1)), _sha256(style.group(1))


def policy(sign_in: SignIn | None) -> str:
    script, style = hashes()
    connect = "'self'" + (f" https://{sign_in.domain}" if sign_in else "")
    return (
        f"default-src 'none'; script-src {script}; style-src {style}; connect-src {connect}; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def page(sign_in: SignIn | None) -> str:
    config = {} if sign_in is None else {"domain": sign_in.domain, "clientId": sign_in.client_id}
    return _source().replace(SIGN_IN_MARKER, html.escape(json.dumps(config), quote=True))


def headers(sign_in: SignIn | None) -> dict[str, str]:
    return {
        **API_HEADERS,
        "Content-Security-Policy": policy(sign_in),
        "Cross-Origin-Opener-Policy": "same-origin",
    }
