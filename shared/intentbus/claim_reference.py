"""A claim check: where a claim-checked payload is kept, and its digest and size.

Apart from ``intentbus.claims``: every stage imports the claim-checking bus, and only a payload too large
to publish, or a fact that carries one, makes or reads a reference.
"""

from pydantic import BaseModel, ConfigDict, Field


class ClaimReference(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    key: str = Field(min_length=1, max_length=512)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)
