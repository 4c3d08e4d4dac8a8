"""Requests to the in-process local cloud go unsigned: moto reads no signature.

Signing a request (SigV4's canonical request and four HMACs) was about a sixteenth of a local run's
CPU, for a signature moto's DynamoDB, SQS and EventBridge never check: they take the region from the
URL and the account from the access key, which no request here maps to an account of its own. While
an in-process local cloud runs (``backend.InProcessMoto``), every client of this process answers
botocore's ``choose-signer`` with UNSIGNED for those three services (the pipeline's hot paths), the
handlers' clients included. Every other service still signs: moto's S3, for one, treats an unsigned
request as anonymous and refuses it. A presigned URL is still signed, and nothing is skipped in server
mode, after the cloud stops, or in what ships to Lambda (this module is tooling).

Registered like moto's own stubber, as a botocore builtin handler: a client gets it when its session
is created after this module is imported; a session created earlier simply keeps signing.
"""

from __future__ import annotations

from typing import Any

import botocore
import botocore.handlers

_SIGNED_URL_SUFFIXES = ("-query", "-presign-post")
UNSIGNED_SERVICES = ("dynamodb", "sqs", "eventbridge")
"""botocore's hyphenized service ids, as in ``choose-signer.<service id>.<operation>``."""
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


for _service in UNSIGNED_SERVICES:
    _spec = (f"choose-signer.{_service}", _choose_signer, botocore.handlers.REGISTER_FIRST)
    if _spec not in botocore.handlers.BUILTIN_HANDLERS:
        botocore.handlers.BUILTIN_HANDLERS.append(_spec)
