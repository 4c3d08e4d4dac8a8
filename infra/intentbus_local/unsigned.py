"""Requests to the in-process local cloud go unsigned: moto reads no signature.

Signing a request (SigV4's canonical request and four HMACs) was about a sixteenth of a local run's
CPU, for a signature moto never checks: it takes the region from the URL and the account from the
access key, which no request here maps to an account of its own. While an in-process local cloud runs
(``backend.InProcessMoto``), every client of this process answers botocore's ``choose-signer`` with
UNSIGNED, the handlers' clients included. A presigned URL is still signed, and nothing is skipped in
server mode, after the cloud stops, or in what ships to Lambda (this module is tooling).

Registered like moto's own stubber, as a botocore builtin handler: a client gets it when its session
is created after this module is imported; a session created earlier simply keeps signing.
"""

from __future__ import annotations

from typing import Any

import botocore
import botocore.handlers

_SIGNED_URL_SUFFIXES = ("-query", "-presign-post")
_running = [0]
"""In-process local clouds started and not yet stopped."""


def _choose_signer(signature_version: Any = None, **_: Any) -> Any:
    if not _running[0] or signature_version is botocore.UNSIGNED:
        return None
    if isinstance(signature_version, str) and signature_version.endswith(_SIGNED_URL_SUFFIXES):
        return None
    return botocore.UNSIGNED


def started() -> None:
    _running[0] += 1


def stopped() -> None:
    _running[0] = max(0, _running[0] - 1)


def active() -> bool:
    return _running[0] > 0


_SPEC = ("choose-signer", _choose_signer, botocore.handlers.REGISTER_FIRST)
if _SPEC not in botocore.handlers.BUILTIN_HANDLERS:
    botocore.handlers.BUILTIN_HANDLERS.append(_SPEC)
