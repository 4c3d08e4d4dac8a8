"""The seed's retry backoff (rule 7): ``min(cap, base * 2**attempt) + jitter``.

One helper for every retry that waits between attempts: in-process, the pipeline's own PublishEvents
(``intentbus.adapters.eventbridge_bus``) and producers' PutEvents (``intentbus.producer``); across
attempts, execute's retries of a failed tool through the message's SQS visibility
(``visibility_seconds``, per the command's ``RetryPolicy``).

The jitter is bounded (added on top, up to one base interval), not "full" (a uniform draw below the
whole interval): a throttled target is never retried sooner than the schedule's floor, and retries of
many commands that failed together still spread over a base interval.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

SQS_MAX_VISIBILITY_SECONDS = 43_200


def backoff_seconds(
    attempt: int, *, base: float, cap: float, jitter: Callable[[], float] = random.random
) -> float:
    """``min(cap, base * 2**attempt) + jitter`` (rule 7); jitter is up to one base interval."""
    return min(cap, base * 2.0**attempt) + jitter() * base


def visibility_seconds(
    failed_attempt: int, *, base: float, cap: float, jitter: Callable[[], float] = random.random
) -> int:
    """The SQS visibility timeout after attempt ``failed_attempt`` (1 for the first) failed: the seed's
    backoff with ``attempt = failed_attempt - 1``, rounded up to SQS's whole seconds and kept within
    its 12 hours. Bounded jitter: never sooner than ``min(cap, base * 2**attempt)``."""
    wait = backoff_seconds(max(0, failed_attempt - 1), base=base, cap=cap, jitter=jitter)
    return min(SQS_MAX_VISIBILITY_SECONDS, math.ceil(wait))
