"""boto3 clients, created on first use and kept for warm invocations."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

# Standard retry mode backs off with jitter on throttling and 5xx (rule 7, for short waits).
DEFAULT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=3, read_timeout=10)


class AwsClients:
    def __init__(
        self,
        session: boto3.session.Session | None = None,
        config: Config = DEFAULT_CONFIG,
        endpoint_url: str | None = None,
    ) -> None:
        self._session = session
        self._config = config
        self._endpoint_url = endpoint_url
        self._clients: dict[str, Any] = {}

    def client(self, service_name: str) -> Any:
        if service_name not in self._clients:
            # One session for every client: each new session reads botocore's endpoint data again.
            if self._session is None:
                self._session = boto3.session.Session()
            self._clients[service_name] = self._session.client(
                service_name, config=self._config, endpoint_url=self._endpoint_url
            )  # type: ignore[call-overload]
        return self._clients[service_name]
