"""Invariant (j) ``retries_keep_their_schedule``: no retry comes sooner than its schedule allows.

Over the local poller's delivery history (``Poller.history``, one ``Delivered`` per delivery of each
message): every delivery after a failed one comes no sooner than the moment the failure made the message
visible again (the handler's backoff, or the queue's visibility timeout); and every backoff a handler
set is at least the floor of the retry policies, ``min(cap, base * 2**(attempt - 1))`` for the attempt
that failed (bounded jitter only ever adds). A delivery whose visibility lapsed (the ``lapses`` delivery
fault) sets no schedule, so the next one may come at any time. Deliveries are compared in the order
they were received, not the order their handlers returned.

The fault harness records the history of every schedule (``Observation.deliveries``) and checks it
against the retry policies of the workflows' commands (``Observation.retry_policies``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence

from intentbus.definition import RetryPolicy
from intentbus_local.poller import Delivered

TOLERANCE_SECONDS = 0.5
"""The virtual clock runs with the wall clock: a release may be noted a hair before its moment."""


def floor_seconds(policies: Sequence[RetryPolicy], failed_attempt: int) -> float:
    """The shortest wait any of the policies allows after ``failed_attempt`` (1 for the first) failed."""
    exponent = max(0, failed_attempt - 1)
    return min((min(p.cap_seconds, p.base_seconds * 2.0**exponent) for p in policies), default=0.0)


def retries_keep_their_schedule(history: Sequence[Delivered], policies: Sequence[RetryPolicy]) -> list[str]:
    violations: list[str] = []
    by_message: dict[tuple[str, str], list[Delivered]] = defaultdict(list)
    for delivered in history:
        by_message[(delivered.queue_url, delivered.message_id)].append(delivered)
    for (queue_url, message_id), deliveries in by_message.items():
        queue = queue_url.rsplit("/", 1)[-1]
        # Noted when each handler returns: a delivery whose visibility lapsed mid-run is noted after
        # the redelivery it let in, so the order is the receive's.
        deliveries.sort(key=lambda delivered: (delivered.receive_count, delivered.at))
        for earlier, later in itertools.pairwise(deliveries):
            if earlier.visible_at is not None and later.at < earlier.visible_at - TOLERANCE_SECONDS:
                violations.append(
                    f"(j/retry-too-soon) {queue} {message_id}: delivery {later.receive_count} came "
                    f"{later.at - earlier.at:.1f} s after delivery {earlier.receive_count} failed; its "
                    f"schedule allowed it after {earlier.visible_at - earlier.at:.1f} s"
                )
        for delivered in deliveries:
            if delivered.delay_seconds is None:
                continue
            floor = floor_seconds(policies, delivered.receive_count)
            if delivered.delay_seconds < floor:
                violations.append(
                    f"(j/backoff-below-floor) {queue} {message_id}: attempt {delivered.receive_count} "
                    f"failed and set a {delivered.delay_seconds} s wait, below the policy's {floor:g} s"
                )
    return violations
