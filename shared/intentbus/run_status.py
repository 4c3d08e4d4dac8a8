"""A run's status and the trust rules it started under: what the stores and the execution guard read of a
run without its state model (``intentbus.state``, whose classes cost a cold start some 5 M instructions)."""

from enum import StrEnum


class Status(StrEnum):
    RUNNING = "RUNNING"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    DENIED = "DENIED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    """A person cancelled the run while it was paused for review."""


LEGACY_CHECKS = 0
RECORDED_CHECKS = 1

TERMINAL = frozenset({Status.COMPLETED, Status.DENIED, Status.FAILED, Status.CANCELLED})
