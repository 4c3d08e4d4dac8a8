"""A stage's clients: botocore's own models, found without listing every service botocore knows."""

from __future__ import annotations

from pathlib import Path

import botocore.session
import pytest
from botocore.exceptions import UnknownServiceError
from botocore.loaders import Loader

from intentbus.adapters.clients import AwsClients
from intentbus.adapters.service_loader import ServiceLoader


@pytest.fixture(autouse=True)
def _lambda_like(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("service", ["dynamodb", "events", "sqs", "s3", "bedrock-runtime"])
def test_a_client_has_the_model_botocore_itself_loads(service: str) -> None:
    ours = AwsClients().client(service)
    theirs = botocore.session.get_session().create_client(service)

    assert ours.meta.service_model.operation_names == theirs.meta.service_model.operation_names
    assert ours.meta.service_model.api_version == theirs.meta.service_model.api_version
    assert ours.meta.service_model.metadata == theirs.meta.service_model.metadata


def test_a_known_service_is_loaded_without_listing_every_service(monkeypatch: pytest.MonkeyPatch) -> None:
    def listed(self: Loader, type_name: str) -> list[str]:
        raise AssertionError("every service was listed")

    monkeypatch.setattr(Loader, "list_available_services", listed)

    AwsClients().client("dynamodb")


def test_an_unknown_service_is_refused_as_botocore_refuses_it() -> None:
    with pytest.raises(UnknownServiceError, match="nosuchservice"):
        AwsClients().client("nosuchservice")


def test_the_loader_searches_where_botocore_does(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    stock = botocore.session.get_session().get_component("data_loader")

    assert ServiceLoader.like(stock).search_paths == stock.search_paths
