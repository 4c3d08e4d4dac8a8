"""Test-only helpers over intentbus.testing: bodies with this suite's fixed source and time."""

from __future__ import annotations

from typing import Any

from intentbus.testing.bodies import producer_body


def raw_body(detail: Any, *, detail_type: str, source: str = "monitoring.example") -> str:
    """What a producer's event looks like when EventBridge delivers it to validate."""
    return producer_body(detail, detail_type=detail_type, source=source)
