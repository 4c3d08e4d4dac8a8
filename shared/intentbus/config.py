"""A function's configuration: its environment variables, validated once, with clear errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from intentbus.errors import ConfigurationError
from intentbus.limits import DEFAULT_CLAIM_CHECK_BYTES, MAX_CLAIM_CHECK_BYTES, MIN_CLAIM_CHECK_BYTES

_UNSET_WHEN_EMPTY = frozenset({"intentbus_claim_bucket", "tracing_backend"})
"""Settings the template passes as an empty string when left at their default."""
_UNSET_WHEN_EMPTY |= {"idempotency_redis_endpoint", "idempotency_redis_secret_arn"}


class Settings:
    """Each field is one environment variable (upper-cased name); template.yaml sets them all.

    Read by hand rather than as a pydantic model: every function reads it at its cold start, and building a
    model of 30 fields costs ~4 ms there. The rules are pydantic's lax ones for environment strings: an int
    or float as written, a bool as ``true``/``false``/``1``/``0``/``yes``/``no``/``on``/``off``/``t``/``f``/
    ``y``/``n`` in any case; a field of ``_RULES`` left unset takes its default.
    """

    workflow_table: str
    event_bus_name: str
    quarantine_queue_url: str
    intentbus_environment: str
    intentbus_workflows: str
    intentbus_producers: str
    """``ProducerBindings``: which tenants each producer may send for; empty binds nobody."""
    intentbus_id_salt: str
    """Per deployment (the template passes the stack's id): salts the approval ids."""
    intentbus_pipeline_roles: str
    """``stage=ROLE_ARN,...``: the principals that propose commands, which may never decide them."""
    intentbus_max_receive_count: int | None
    """The stage queues' ``maxReceiveCount`` (template parameter ``MaxReceiveCount``): a failure on the
    last receive pauses the run for review instead of leaving it to the DLQ; and no command's retry policy
    may want more attempts."""
    intentbus_claim_bucket: str | None
    """The claim-check bucket (``intentbus.claims``): payloads of facts over the threshold are kept there."""
    intentbus_claim_check_bytes: int
    """A fact whose PutEvents entry would be larger travels by claim check (``ClaimCheckThresholdBytes``)."""
    ingress_bus_name: str | None
    """The producers' bus: where the repair path resubmits a repaired input (repair and approvals)."""
    repair_budget_per_hour: int
    """Repairs the model is asked for per tenant and hour (``RepairBudgetPerHour``); past it, parked."""
    idempotency_table: str | None
    idempotency_retention_seconds: int
    """How long a command's result is kept, so a redelivery gets it instead of running again."""
    idempotency_lease_seconds: float | None
    """Caps the in-progress lock; by default it lasts the invocation's remaining time."""
    idempotency_redis_endpoint: str | None
    """Execute's idempotency records in Redis (ElastiCache) at this host instead of DynamoDB."""
    idempotency_redis_port: int
    idempotency_redis_tls: bool
    idempotency_redis_secret_arn: str | None
    """A Secrets Manager secret with the Redis AUTH token (plain, or JSON ``username``/``password``)."""
    bedrock_model_id: str | None
    """The Bedrock model (or inference profile) the decide stage's model agents use; unset: scripted."""
    bedrock_region: str | None
    """Where to call Bedrock; by default the function's own region."""
    bedrock_max_tokens: int
    bedrock_temperature: float
    bedrock_tool_choice: Literal["auto", "any"]
    """``any`` makes the model call a tool (Claude, Nova, Mistral Large); ``auto`` works with every model."""
    tracing_backend: Literal["xray", "otel", "off"]
    """Who makes the per-record spans (template parameter ``TracingBackend``, see intentbus.spans): the
    X-Ray SDK through Powertools, the OpenTelemetry SDK (imported only then), or nobody."""

    def __init__(self, **values: Any) -> None:
        """The settings ``values`` name (already read), the others at their defaults."""
        for name, (_, default) in _RULES.items():
            value = values.pop(name, default)
            if value is _REQUIRED:
                raise TypeError(f"{name} is required")
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(f"unknown settings: {', '.join(values)}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"settings are read-only: {name}")

    def __repr__(self) -> str:
        return f"Settings({', '.join(f'{name}={getattr(self, name)!r}' for name in _RULES)})"

    def bedrock(self) -> BedrockSettings | None:
        """The Bedrock settings, or ``None`` when no model is configured (model agents use fallbacks)."""
        if self.bedrock_model_id is None:
            return None
        return BedrockSettings(
            model_id=self.bedrock_model_id,
            region=self.bedrock_region,
            max_tokens=self.bedrock_max_tokens,
            temperature=self.bedrock_temperature,
            tool_choice=self.bedrock_tool_choice,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        values: dict[str, Any] = {}
        invalid: list[str] = []
        for name, value in env.items():
            field = name.lower()
            if field not in _RULES:
                continue
            if value == "" and (field.startswith("bedrock_") or field in _UNSET_WHEN_EMPTY):
                continue  # the template passes an empty string for a parameter left at its default
            try:
                values[field] = _RULES[field][0](value)
            except (TypeError, ValueError):
                invalid.append(field)
        invalid += [
            name for name, (_, default) in _RULES.items() if default is _REQUIRED and name not in values
        ]
        if invalid:
            missing = ", ".join(name.upper() for name in _RULES if name in invalid)
            raise ConfigurationError(f"invalid or missing environment variables: {missing}")
        return cls(**values)

    def require_ingress_bus(self) -> str:
        if not self.ingress_bus_name:
            raise ConfigurationError("INGRESS_BUS_NAME is required to resubmit repaired inputs")
        return self.ingress_bus_name

    def require_idempotency_table(self) -> str:
        if not self.idempotency_table:
            raise ConfigurationError("IDEMPOTENCY_TABLE is required by the execute stage")
        return self.idempotency_table


def _text(*, min_length: int = 0, max_length: int | None = None) -> Callable[[Any], str]:
    def read(value: Any) -> str:
        if not isinstance(value, str) or len(value) < min_length:
            raise ValueError(value)
        if max_length is not None and len(value) > max_length:
            raise ValueError(value)
        return value

    return read


def _integer(*, ge: int | None = None, le: int | None = None) -> Callable[[Any], int]:
    def read(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError(value)
        number = int(value.strip()) if isinstance(value, str) else int(value)
        if isinstance(value, float) and number != value:
            raise ValueError(value)
        _within(number, ge=ge, le=le)
        return number

    return read


def _number(
    *, ge: float | None = None, le: float | None = None, gt: float | None = None
) -> Callable[[Any], float]:
    def read(value: Any) -> float:
        if isinstance(value, bool):
            raise ValueError(value)
        number = float(value)
        if gt is not None and not number > gt:
            raise ValueError(value)
        _within(number, ge=ge, le=le)
        return number

    return read


def _within(number: float, *, ge: float | None, le: float | None) -> None:
    if (ge is not None and number < ge) or (le is not None and number > le):
        raise ValueError(number)


_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(value)


def _one_of(*choices: str) -> Callable[[Any], str]:
    def read(value: Any) -> str:
        if value not in choices:
            raise ValueError(value)
        return str(value)

    return read


_REQUIRED: Any = object()
_RULES: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "workflow_table": (_text(min_length=1), _REQUIRED),
    "event_bus_name": (_text(min_length=1), _REQUIRED),
    "quarantine_queue_url": (_text(min_length=1), _REQUIRED),
    "intentbus_environment": (_text(min_length=1), _REQUIRED),
    "intentbus_workflows": (_text(min_length=1), _REQUIRED),
    "intentbus_producers": (_text(), ""),
    "intentbus_id_salt": (_text(), ""),
    "intentbus_pipeline_roles": (_text(), ""),
    "intentbus_max_receive_count": (_integer(ge=1), None),
    "intentbus_claim_bucket": (_text(min_length=1), None),
    "intentbus_claim_check_bytes": (
        _integer(ge=MIN_CLAIM_CHECK_BYTES, le=MAX_CLAIM_CHECK_BYTES),
        DEFAULT_CLAIM_CHECK_BYTES,
    ),
    "ingress_bus_name": (_text(), None),
    "repair_budget_per_hour": (_integer(ge=0, le=100_000), 20),
    "idempotency_table": (_text(), None),
    "idempotency_retention_seconds": (_integer(ge=1), 7 * 86400),
    "idempotency_lease_seconds": (_number(gt=0), None),
    "idempotency_redis_endpoint": (_text(min_length=1), None),
    "idempotency_redis_port": (_integer(ge=1, le=65535), 6379),
    "idempotency_redis_tls": (_boolean, True),
    "idempotency_redis_secret_arn": (_text(min_length=1), None),
    "bedrock_model_id": (_text(min_length=1, max_length=2048), None),
    "bedrock_region": (_text(min_length=1), None),
    "bedrock_max_tokens": (_integer(ge=1, le=200_000), 1024),
    "bedrock_temperature": (_number(ge=0.0, le=1.0), 0.0),
    "bedrock_tool_choice": (_one_of("auto", "any"), "auto"),
    "tracing_backend": (_one_of("xray", "otel", "off"), "xray"),
}
"""Each setting: how its environment string is read (``ValueError`` when it is not valid), its default."""


class BedrockSettings(BaseModel):
    """How the decide stage calls Bedrock: the model, where, and its inference settings."""

    # Built on first use: only a deployment with BEDROCK_MODEL_ID set needs it (cold start).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    model_id: str = Field(min_length=1)
    region: str | None = None
    max_tokens: int = Field(default=1024, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=1.0)
    tool_choice: Literal["auto", "any"] = "auto"
