"""A function's configuration: its environment variables, validated once, with clear errors."""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from annotated_types import Ge, Gt, Le, MaxLen, MinLen
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from intentbus.errors import ConfigurationError
from intentbus.limits import DEFAULT_CLAIM_CHECK_BYTES, MAX_CLAIM_CHECK_BYTES, MIN_CLAIM_CHECK_BYTES

if TYPE_CHECKING:
    from intentbus.bedrock_settings import BedrockSettings

_UNSET_WHEN_EMPTY = frozenset({"intentbus_claim_bucket", "tracing_backend"})
"""Settings the template passes as an empty string when left at their default."""
_UNSET_WHEN_EMPTY |= {"idempotency_redis_endpoint", "idempotency_redis_secret_arn"}


class Settings(BaseModel):
    """Each field is one environment variable (upper-cased name); template.yaml sets them all."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    workflow_table: str = Field(min_length=1)
    event_bus_name: str = Field(min_length=1)
    quarantine_queue_url: str = Field(min_length=1)
    intentbus_environment: str = Field(min_length=1)
    intentbus_workflows: str = Field(min_length=1)
    intentbus_producers: str = ""
    """``ProducerBindings``: which tenants each producer may send for; empty binds nobody."""
    intentbus_id_salt: str = ""
    """Per deployment (the template passes the stack's id): salts the approval ids."""
    intentbus_pipeline_roles: str = ""
    """``stage=ROLE_ARN,...``: the principals that propose commands, which may never decide them."""
    intentbus_max_receive_count: int | None = Field(default=None, ge=1)
    """The stage queues' ``maxReceiveCount`` (template parameter ``MaxReceiveCount``): a failure on the
    last receive pauses the run for review instead of leaving it to the DLQ; and no command's retry policy
    may want more attempts."""
    intentbus_claim_bucket: str | None = Field(default=None, min_length=1)
    """The claim-check bucket (``intentbus.claims``): payloads of facts over the threshold are kept there."""
    intentbus_claim_check_bytes: int = Field(
        default=DEFAULT_CLAIM_CHECK_BYTES, ge=MIN_CLAIM_CHECK_BYTES, le=MAX_CLAIM_CHECK_BYTES
    )
    """A fact whose PutEvents entry would be larger travels by claim check (``ClaimCheckThresholdBytes``)."""
    ingress_bus_name: str | None = None
    """The producers' bus: where the repair path resubmits a repaired input (repair and approvals)."""
    repair_budget_per_hour: int = Field(default=20, ge=0, le=100_000)
    """Repairs the model is asked for per tenant and hour (``RepairBudgetPerHour``); past it, parked."""
    idempotency_table: str | None = None
    idempotency_retention_seconds: int = Field(default=7 * 86400, gt=0)
    """How long a command's result is kept, so a redelivery gets it instead of running again."""
    idempotency_lease_seconds: float | None = Field(default=None, gt=0)
    """Caps the in-progress lock; by default it lasts the invocation's remaining time."""
    idempotency_redis_endpoint: str | None = Field(default=None, min_length=1)
    """Execute's idempotency records in Redis (ElastiCache) at this host instead of DynamoDB."""
    idempotency_redis_port: int = Field(default=6379, ge=1, le=65535)
    idempotency_redis_tls: bool = True
    idempotency_redis_secret_arn: str | None = Field(default=None, min_length=1)
    """A Secrets Manager secret with the Redis AUTH token (plain, or JSON ``username``/``password``)."""
    bedrock_model_id: str | None = Field(default=None, min_length=1, max_length=2048)
    """The Bedrock model (or inference profile) the decide stage's model agents use; unset: scripted."""
    bedrock_region: str | None = Field(default=None, min_length=1)
    """Where to call Bedrock; by default the function's own region."""
    bedrock_max_tokens: int = Field(default=1024, ge=1, le=200_000)
    bedrock_temperature: float = Field(default=0.0, ge=0.0, le=1.0)
    bedrock_tool_choice: Literal["auto", "any"] = "auto"
    """``any`` makes the model call a tool (Claude, Nova, Mistral Large); ``auto`` works with every model."""
    tracing_backend: Literal["xray", "otel", "off"] = "xray"
    """Who makes the per-record spans (template parameter ``TracingBackend``, see intentbus.spans): the
    X-Ray SDK through Powertools, the OpenTelemetry SDK (imported only then), or nobody."""

    @model_validator(mode="before")
    @classmethod
    def _unset_empty_bedrock(cls, values: Any) -> Any:
        """The template passes an empty string for a Bedrock parameter left at its default: unset."""
        if isinstance(values, dict):
            return _without_unset(values)
        return values

    def bedrock(self) -> "BedrockSettings | None":
        """The Bedrock settings, or ``None`` when no model is configured (model agents use fallbacks)."""
        if self.bedrock_model_id is None:
            return None
        from intentbus.bedrock_settings import BedrockSettings

        return BedrockSettings(
            model_id=self.bedrock_model_id,
            region=self.bedrock_region,
            max_tokens=self.bedrock_max_tokens,
            temperature=self.bedrock_temperature,
            tool_choice=self.bedrock_tool_choice,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Settings":
        values = {name.lower(): value for name, value in env.items() if name.lower() in cls.model_fields}
        plain = plainly_valid(cls, values)
        if plain is not None:
            return plain
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            missing = ", ".join(str(item["loc"][0]).upper() for item in error.errors())
            raise ConfigurationError(f"invalid or missing environment variables: {missing}") from None

    def require_ingress_bus(self) -> str:
        if not self.ingress_bus_name:
            raise ConfigurationError("INGRESS_BUS_NAME is required to resubmit repaired inputs")
        return self.ingress_bus_name

    def require_idempotency_table(self) -> str:
        if not self.idempotency_table:
            raise ConfigurationError("IDEMPOTENCY_TABLE is required by the execute stage")
        return self.idempotency_table


def __getattr__(name: str) -> Any:
    """``BedrockSettings`` lives in ``intentbus.bedrock_settings`` (only a deployment with a model creates
    the class); imported from here, it loads there."""
    if name == "BedrockSettings":
        from intentbus.bedrock_settings import BedrockSettings

        return BedrockSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_UNSURE = object()
"""What the hand check returns for a value it leaves to pydantic."""
_CHECKED_CONFIG = {"frozen": True, "extra": "ignore", "defer_build": True}
_CHECKED_VALIDATORS = ("_unset_empty_bedrock",)
_BOOLS = {"0": False, "off": False, "f": False, "false": False, "n": False, "no": False}
_BOOLS |= {"1": True, "on": True, "t": True, "true": True, "y": True, "yes": True}
_MAX_DIGITS = 15


def plainly_valid(model: type[Settings], values: dict[str, Any]) -> Settings | None:
    """``model_validate(values)``'s instance without building the model's validator (~21 M instructions of a
    cold start), when every value is in a form whose reading is unambiguous; ``None`` leaves the values,
    valid or not, to ``model_validate``. Only what pydantic would accept the same way is accepted here:
    ints of plain ASCII digits, floats of ASCII digits with at most one point, pydantic's bool words,
    a ``Literal``'s exact texts, strings by their length; a constraint, type or validator the check does
    not know defers every value."""
    if dict(model.model_config) != _CHECKED_CONFIG or not _only_known_validators(model):
        return None
    kept = _without_unset(values)
    checked: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if field.alias is not None or field.validation_alias is not None:
            return None
        if name not in kept:
            if field.is_required():
                return None
            continue
        value = _checked(field, kept[name])
        if value is _UNSURE:
            return None
        checked[name] = value
    return model.model_construct(**checked)


def _without_unset(values: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in values.items()
        if not ((k.startswith("bedrock_") or k in _UNSET_WHEN_EMPTY) and v == "")
    }


def _only_known_validators(model: type[Settings]) -> bool:
    decorators = model.__pydantic_decorators__
    return (
        tuple(decorators.model_validators) == _CHECKED_VALIDATORS
        and not decorators.validators
        and not decorators.field_validators
        and not decorators.root_validators
    )


def _checked(field: FieldInfo, value: Any) -> Any:
    if type(value) is not str:
        return _UNSURE
    annotation = field.annotation
    if annotation is str or annotation == str | None:
        read: Any = value if value.isascii() or _encodable(value) else _UNSURE
    elif annotation is int or annotation == int | None:
        read = int(value) if _plain_digits(value) else _UNSURE
    elif annotation is float or annotation == float | None:
        read = _plain_float(value)
    elif annotation is bool:
        read = _BOOLS.get(value.lower(), _UNSURE) if value.isascii() else _UNSURE
    elif get_origin(annotation) is Literal and all(type(option) is str for option in get_args(annotation)):
        read = value if value in get_args(annotation) else _UNSURE
    else:
        return _UNSURE
    if read is _UNSURE or not all(_within(constraint, read) for constraint in field.metadata):
        return _UNSURE
    return read


def _plain_float(text: str) -> float | object:
    whole, point, fraction = text.partition(".")
    if _plain_digits(whole) and (not point or _plain_digits(fraction)):
        return float(text)
    return _UNSURE


def _plain_digits(text: str) -> bool:
    return 0 < len(text) <= _MAX_DIGITS and text.isascii() and text.isdigit()


def _within(constraint: object, value: Any) -> bool:
    """Whether ``value`` meets the constraint; a constraint the check does not know fails it (pydantic
    decides)."""
    if type(constraint) is MinLen:
        return isinstance(value, str) and len(value) >= constraint.min_length
    if type(constraint) is MaxLen:
        return isinstance(value, str) and len(value) <= constraint.max_length
    if isinstance(value, str) or type(value) is bool:
        return False
    if type(constraint) is Ge:
        return bool(value >= constraint.ge)
    if type(constraint) is Le:
        return bool(value <= constraint.le)
    if type(constraint) is Gt:
        return bool(value > constraint.gt)
    return False


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
