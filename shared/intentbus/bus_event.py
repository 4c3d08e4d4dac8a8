"""The EventBridge event an SQS body holds: Powertools' ``EventBridgeModel``, field for field.

Importing Powertools' model imports its whole parser package first (``parser/__init__`` loads its
``parse`` functions, which import pydantic's network types and ``TypeAdapter``): ~12 M instructions of
every stage's cold start that no stage uses. This model validates as Powertools' does, the same fields,
aliases, types, defaults and ``detail`` validator (a unit test compares them with Powertools' own, so a
Powertools upgrade that changes its model fails it); it leaves out only the fields' descriptions and
examples, which no validation reads.
"""

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

RawDictOrModel = dict[str, Any] | type[BaseModel] | BaseModel
"""``aws_lambda_powertools.utilities.parser.types.RawDictOrModel``."""


class EventBridgeModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    version: str
    id: str
    source: str
    account: str
    time: datetime
    region: str
    resources: list[str]
    detail_type: str = Field(..., alias="detail-type")
    detail: RawDictOrModel
    replay_name: str | None = Field(None, alias="replay-name")

    @field_validator("detail", mode="before")
    @classmethod
    def validate_detail(cls, value: Any, fields: ValidationInfo) -> Any:
        # EventBridge Scheduler sends detail as the string '{}' when there is no payload (Powertools #6112).
        return {} if fields.data.get("source") == "aws.scheduler" and value == "{}" else value
