"""Errors that route a message: malformed input goes to quarantine, everything else is retried."""

from __future__ import annotations

from pydantic import ValidationError


class MalformedInput(Exception):
    """The message can never be processed as it is; it goes to quarantine with this reason."""

    def __init__(self, reason: str, *, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field

    @classmethod
    def from_validation(cls, error: ValidationError, *, prefix: str = "") -> MalformedInput:
        """Names the first offending field, e.g. ``payload.desired_count: Input should be ...``."""
        first = error.errors(include_url=False)[0]
        location = ".".join(str(part) for part in first["loc"])
        field = f"{prefix}{location}" if location else prefix.rstrip(".") or None
        problems = "; ".join(
            f"{prefix}{'.'.join(str(part) for part in item['loc'])}: {item['msg']}".strip()
            for item in error.errors(include_url=False)[:5]
        )
        more = error.error_count() - 5
        return cls(problems + (f" (and {more} more)" if more > 0 else ""), field=field)


NOT_RECORDED = "not recorded by the pipeline"


class NotRecorded(MalformedInput):
    """A pipeline fact that the durable record does not hold as it claims: forged, or altered on the way.

    It is quarantined like malformed input, and counted apart (the ``ForgedFacts`` metric)."""

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(f"{NOT_RECORDED}: {detail}", field=field)


class ConfigurationError(Exception):
    """The function is deployed without something it needs; fix the template, not the message."""


class PublishError(Exception):
    """Some entries could not be put on the bus after retries; the message is retried."""
