"""The seed's retry backoff (rule 7): ``min(cap, base * 2**attempt) + jitter``.

One helper for every in-process retry that waits between attempts: the pipeline's own PublishEvents
(``intentbus.adapters.eventbridge_bus``) and producers' PutEvents (``intentbus.producer``).
"""

from __future__ import annotations

import random
from collections.abc import Callable


def backoff_seconds(
    attempt: int, *, base: float, cap: float, jitter: Callable[[], float] = random.random
) -> float:
    """``min(cap, base * 2**attempt) + jitter`` (rule 7); jitter is up to one base interval."""
    return min(cap, base * 2.0**attempt) + jitter() * base
