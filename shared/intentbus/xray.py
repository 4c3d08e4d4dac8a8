"""Powertools' Tracer only when X-Ray is the tracing backend and tracing is on; otherwise the X-Ray SDK is
never imported (cold start)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

Entry = TypeVar("Entry", bound=Callable[..., object])


def xray_tracer() -> Tracer | None:
    """Powertools' Tracer (patching botocore), only when X-Ray is the tracing backend and tracing is on
    (``TRACING_BACKEND``, ``POWERTOOLS_TRACE_DISABLED`` as the template sets them)."""
    backend = os.environ.get("TRACING_BACKEND") or "xray"
    disabled = os.environ.get("POWERTOOLS_TRACE_DISABLED", "").strip().lower() in ("1", "true", "yes", "on")
    if backend != "xray" or disabled:
        return None
    from aws_lambda_powertools import Tracer

    return Tracer(patch_modules=("botocore",))  # AWS calls traced; nothing else to patch


def traced(entry: Entry, tracer: Tracer | None, *, capture_response: bool = True) -> Entry:
    """``entry`` in the tracer's Lambda handler segment, or as it is without a tracer."""
    if tracer is None:
        return entry
    return cast(Entry, tracer.capture_lambda_handler(entry, capture_response=capture_response))
