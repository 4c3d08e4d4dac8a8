"""How the decide stage calls Bedrock: apart from ``intentbus.config``, since only a deployment with
``BEDROCK_MODEL_ID`` set makes them (every function imports its settings)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class BedrockSettings(BaseModel):
    """How the decide stage calls Bedrock: the model, where, and its inference settings."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    model_id: str = Field(min_length=1)
    region: str | None = None
    max_tokens: int = Field(default=1024, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=1.0)
    tool_choice: Literal["auto", "any"] = "auto"
