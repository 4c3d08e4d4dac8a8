"""How many approvals are pending and the oldest one's age, as the expiry sweep reports them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import MetricUnit

from intentbus.telemetry import APPROVAL_OLDEST_AGE, APPROVALS_PENDING

if TYPE_CHECKING:
    from aws_lambda_powertools import Metrics

    from intentbus.approval_record import Approval


@dataclass(frozen=True)
class ApprovalBacklog:
    """How many approvals are pending and the oldest one's age."""

    pending: int
    oldest_age_seconds: float


def approval_backlog(approvals: Iterable[Approval], now: datetime) -> ApprovalBacklog:
    ages = [max(0.0, (now - approval.requested_at).total_seconds()) for approval in approvals]
    return ApprovalBacklog(pending=len(ages), oldest_age_seconds=max(ages, default=0.0))


def report_approval_backlog(metrics: Metrics, pending: Iterable[Approval], now: datetime) -> ApprovalBacklog:
    """How many approvals are pending (of every tenant) and the oldest one's age: ``pending`` is what the
    expiry sweep left pending (``Sweep.pending``), so the sweep reads its index once."""
    backlog = approval_backlog(pending, now)
    metrics.add_metric(name=APPROVALS_PENDING, unit=MetricUnit.Count, value=backlog.pending)
    metrics.add_metric(name=APPROVAL_OLDEST_AGE, unit=MetricUnit.Seconds, value=backlog.oldest_age_seconds)
    return backlog
