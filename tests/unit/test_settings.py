"""A function's settings: one validated pydantic model of its environment, with one-line errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from intentbus.config import Settings
from intentbus.errors import ConfigurationError

REQUIRED = {
    "WORKFLOW_TABLE": "table",
    "EVENT_BUS_NAME": "bus",
    "QUARANTINE_QUEUE_URL": "https://sqs/quarantine",
    "INTENTBUS_ENVIRONMENT": "prod",
    "INTENTBUS_WORKFLOWS": "intentbus.workflows.incident",
}


def test_unset_settings_take_their_defaults_and_strings_are_read_as_their_types() -> None:
    settings = Settings.from_env(
        REQUIRED
        | {
            "IDEMPOTENCY_REDIS_TLS": "False",
            "IDEMPOTENCY_REDIS_PORT": "6380",
            "IDEMPOTENCY_LEASE_SECONDS": "2.5",
            "BEDROCK_MODEL_ID": "",
            "PATH": "/usr/bin",
        }
    )

    assert settings.workflow_table == "table"
    assert settings.idempotency_redis_tls is False
    assert settings.idempotency_redis_port == 6380
    assert settings.idempotency_lease_seconds == 2.5
    assert settings.bedrock_model_id is None
    assert settings.bedrock() is None
    assert settings.tracing_backend == "xray"
    assert settings.intentbus_max_receive_count is None


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"WORKFLOW_TABLE": ""}, "WORKFLOW_TABLE"),
        ({"IDEMPOTENCY_REDIS_TLS": "maybe"}, "IDEMPOTENCY_REDIS_TLS"),
        ({"INTENTBUS_CLAIM_CHECK_BYTES": "1"}, "INTENTBUS_CLAIM_CHECK_BYTES"),
        ({"BEDROCK_TEMPERATURE": "2"}, "BEDROCK_TEMPERATURE"),
        ({"IDEMPOTENCY_LEASE_SECONDS": "0"}, "IDEMPOTENCY_LEASE_SECONDS"),
        ({"BEDROCK_TOOL_CHOICE": "none"}, "BEDROCK_TOOL_CHOICE"),
        ({"REPAIR_BUDGET_PER_HOUR": "many"}, "REPAIR_BUDGET_PER_HOUR"),
    ],
)
def test_an_invalid_setting_is_named_in_one_line(bad: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env(REQUIRED | bad)

    assert str(refused.value) == f"invalid or missing environment variables: {named}"


def test_every_missing_setting_is_named_in_the_order_of_the_settings() -> None:
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env({"INTENTBUS_WORKFLOWS": "w", "IDEMPOTENCY_REDIS_PORT": "0", "EVENT_BUS_NAME": "b"})

    assert str(refused.value) == (
        "invalid or missing environment variables: "
        "WORKFLOW_TABLE, QUARANTINE_QUEUE_URL, INTENTBUS_ENVIRONMENT, IDEMPOTENCY_REDIS_PORT"
    )


def test_settings_are_read_only() -> None:
    settings = Settings.from_env(REQUIRED)

    with pytest.raises(ValidationError, match="frozen"):
        settings.workflow_table = "another"  # type: ignore[misc]
