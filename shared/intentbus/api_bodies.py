"""The approvals API's request bodies and path parameters: small, closed, validated before a handler runs."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from intentbus.envelope import TENANT_PATTERN

APPROVAL_ID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"
TENANT_ID_PATTERN = TENANT_PATTERN
PARK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9\-]{0,99}$"
"""A parked input's id: its quarantine message's SQS id."""
MAX_BODY_BYTES = 16 * 1024
REASON_LENGTH = 1000


class _Body(BaseModel):
    # Unknown fields are refused by name: a body that says who decides ("approver", "tenant_id") is a 400.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class DecisionBody(_Body):
    reason: str = Field(default="", max_length=REASON_LENGTH)


class CancelBody(_Body):
    reason: str = Field(min_length=1, max_length=REASON_LENGTH)
    version: int | None = Field(default=None, ge=1)
    """The run's version at the pause answered (``GET .../reviews`` shows it); default: the latest pause."""


class ResumeBody(CancelBody):
    max_depth: int | None = Field(default=None, ge=0, le=100_000)
    max_steps: int | None = Field(default=None, ge=0, le=100_000)
    max_tokens: int | None = Field(default=None, ge=0, le=1_000_000_000)
    deadline_hours: float | None = Field(default=None, gt=0, le=24 * 366)


class ResubmitBody(_Body):
    """A parked input's repair: its new ``payload`` (in the original envelope), or its whole ``detail``."""

    payload: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> "ResubmitBody":
        if (self.payload is None) == (self.detail is None):
            raise ValueError("give exactly one of payload and detail")
        return self


class DiscardBody(_Body):
    reason: str = Field(min_length=1, max_length=REASON_LENGTH)
