"""The library's errors, under one base with a stable ``code``.

Malformed input goes to quarantine; everything else is retried."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError


class IntentbusError(Exception):
    """Every error the library raises on purpose. ``code`` names its kind and never changes, so a caller
    (the CLI's exit status, a log query) routes by it rather than by the message."""

    code: ClassVar[str] = "intentbus_error"


class MalformedInput(IntentbusError):
    """The message can never be processed as it is; it goes to quarantine with this reason."""

    code: ClassVar[str] = "malformed_input"

    def __init__(self, reason: str, *, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field

    @classmethod
    def from_validation(
        cls, error: ValidationError, model: type[BaseModel], *, prefix: str = ""
    ) -> MalformedInput:
        """Names the first offending field, e.g. ``payload.desired_count: Input should be ...``.

        Told without the input (``intentbus.validation_errors``): the reason is logged and traced, and
        the input may be a model's answer or a producer's sensitive field."""
        from intentbus.validation_errors import problems  # only a refused input needs it

        found = problems(error, model)
        told = "; ".join(
            f"{where}: {problem.message}" if (where := problem.where(prefix)) else problem.message
            for problem in found[:5]
        )
        more = len(found) - 5
        return cls(told + (f" (and {more} more)" if more > 0 else ""), field=found[0].where(prefix) or None)


NOT_RECORDED = "not recorded by the pipeline"


class NotRecorded(MalformedInput):
    """A pipeline fact that the durable record does not hold as it claims: forged, or altered on the way.

    It is quarantined like malformed input, and counted apart (the ``ForgedFacts`` metric)."""

    code: ClassVar[str] = "not_recorded"

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(f"{NOT_RECORDED}: {detail}", field=field)


class ConfigurationError(IntentbusError):
    """The function is deployed without something it needs; fix the template, not the message."""

    code: ClassVar[str] = "configuration"


class PublishError(IntentbusError):
    """Some entries could not be put on the bus after retries; the message is retried."""

    code: ClassVar[str] = "publish"
