"""A function's configuration: its environment variables, validated once, with clear errors."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intentbus.errors import ConfigurationError


class Settings(BaseModel):
    """Each field is one environment variable (upper-cased name); template.yaml sets them all."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    workflow_table: str = Field(min_length=1)
    event_bus_name: str = Field(min_length=1)
    quarantine_queue_url: str = Field(min_length=1)
    intentbus_environment: str = Field(min_length=1)
    intentbus_workflows: str = Field(min_length=1)
    idempotency_table: str | None = None
    idempotency_retention_seconds: int = Field(default=7 * 86400, gt=0)
    """How long a command's result is kept, so a redelivery gets it instead of running again."""
    idempotency_lease_seconds: float | None = Field(default=None, gt=0)
    """Caps the in-progress lock; by default it lasts the invocation's remaining time."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        values = {name.lower(): value for name, value in env.items() if name.lower() in cls.model_fields}
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            missing = ", ".join(str(item["loc"][0]).upper() for item in error.errors())
            raise ConfigurationError(f"invalid or missing environment variables: {missing}") from None

    def require_idempotency_table(self) -> str:
        if not self.idempotency_table:
            raise ConfigurationError("IDEMPOTENCY_TABLE is required by the execute stage")
        return self.idempotency_table
