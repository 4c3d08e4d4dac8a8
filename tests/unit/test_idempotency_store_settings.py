"""Which idempotency store execute uses, from the environment the template sets."""

from __future__ import annotations

import pytest

from intentbus.adapters.redis_idempotency import auth_credentials
from intentbus.config import Settings
from intentbus.errors import ConfigurationError

BASE = {
    "WORKFLOW_TABLE": "wf",
    "EVENT_BUS_NAME": "bus",
    "QUARANTINE_QUEUE_URL": "https://sqs/q",
    "INTENTBUS_ENVIRONMENT": "dev",
    "INTENTBUS_WORKFLOWS": "intentbus.workflows.incident",
    "IDEMPOTENCY_TABLE": "idem",
}


def test_the_template_defaults_keep_dynamodb() -> None:
    settings = Settings.from_env(
        BASE
        | {
            "IDEMPOTENCY_REDIS_ENDPOINT": "",
            "IDEMPOTENCY_REDIS_PORT": "6379",
            "IDEMPOTENCY_REDIS_TLS": "true",
            "IDEMPOTENCY_REDIS_SECRET_ARN": "",
        }
    )
    assert settings.idempotency_redis_endpoint is None
    assert settings.idempotency_redis_secret_arn is None


def test_an_endpoint_selects_redis_with_its_settings() -> None:
    settings = Settings.from_env(
        BASE
        | {
            "IDEMPOTENCY_REDIS_ENDPOINT": "idem.abc123.use1.cache.amazonaws.com",
            "IDEMPOTENCY_REDIS_PORT": "6380",
            "IDEMPOTENCY_REDIS_TLS": "false",
        }
    )
    assert (settings.idempotency_redis_endpoint, settings.idempotency_redis_port) == (
        "idem.abc123.use1.cache.amazonaws.com",
        6380,
    )
    assert settings.idempotency_redis_tls is False


def test_a_bad_port_is_one_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="IDEMPOTENCY_REDIS_PORT"):
        Settings.from_env(BASE | {"IDEMPOTENCY_REDIS_ENDPOINT": "h", "IDEMPOTENCY_REDIS_PORT": "0"})


@pytest.mark.parametrize(
    ("secret", "expected"),
    [
        (None, (None, None)),
        ("s3cret-token", (None, "s3cret-token")),
        ('{"username": "execute", "password": "pw"}', ("execute", "pw")),
        ('"quoted"', (None, '"quoted"')),
    ],
)
def test_the_auth_secret_is_a_token_or_a_username_and_password(
    secret: str | None, expected: tuple[str | None, str | None]
) -> None:
    assert auth_credentials(secret) == expected
