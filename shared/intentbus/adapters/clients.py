"""AWS clients, created when first needed and kept for warm invocations.

botocore's own session makes them: nothing here uses boto3's resource layer, so a function that does not
otherwise need boto3 does not import it (or s3transfer) at its cold start. A boto3 session passed in (a
test's, sharing moto's state) is used as given.

The session made here loads a client's service model from that service's own directory: botocore's loader
first lists every service it knows (some 400 directories, each listed and stat'ed) to tell an unknown name,
about 10 ms of each cold start.
"""

from __future__ import annotations

from typing import Any

from botocore.config import Config

from intentbus import coldstart
from intentbus.adapters import endpoint_params

# Standard retry mode backs off with jitter on throttling and 5xx (rule 7, for short waits).
DEFAULT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=3, read_timeout=10)

BUILT_REQUESTS = frozenset({"dynamodb", "events", "sqs", "s3"})
"""Services whose requests the runtime builds itself (store, bus, quarantine, claim checks): botocore's
client-side parameter validation, a quarter of a DynamoDB call's CPU, is skipped for them. AWS validates
every request anyway; a bad one is a ``ClientError`` (ValidationException) rather than a
``ParamValidationError``."""
_UNVALIDATED = Config(parameter_validation=False)


class AwsClients:
    def __init__(
        self,
        session: Any | None = None,
        config: Config = DEFAULT_CONFIG,
        endpoint_url: str | None = None,
    ) -> None:
        """``session``: a boto3 or botocore session; by default botocore's, made on the first client."""
        self._session = session
        self._config = config
        self._endpoint_url = endpoint_url
        self._clients: dict[str, Any] = {}

    def client(self, service_name: str) -> Any:
        if service_name not in self._clients:
            with coldstart.building():
                self._clients[service_name] = self._create(service_name)
        return self._clients[service_name]

    def lazy(self, service_name: str) -> Any:
        """A stand-in for ``client(service_name)`` that creates it on its first call."""
        return LazyClient(self, service_name)

    def _create(self, service_name: str) -> Any:
        # One session for every client: each new session reads botocore's endpoint data again.
        if self._session is None:
            self._session = _session()
        session: Any = self._session
        # boto3's session (it has resources) adds its own customizations in client(); botocore's creates.
        create = session.client if hasattr(session, "resource") else session.create_client
        config = self._config.merge(_UNVALIDATED) if service_name in BUILT_REQUESTS else self._config
        return endpoint_params.install(create(service_name, config=config, endpoint_url=self._endpoint_url))


class LazyClient:
    """Forwards every attribute to the client, which is created on first use."""

    def __init__(self, clients: AwsClients, service_name: str) -> None:
        self._clients = clients
        self._service_name = service_name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._clients.client(self._service_name), name)


def _session() -> Any:
    import botocore.session

    from intentbus.adapters.service_loader import ServiceLoader

    session = botocore.session.get_session()
    session.register_component("data_loader", ServiceLoader.like(session.get_component("data_loader")))
    return session
