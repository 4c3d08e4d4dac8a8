"""A stage's clients: botocore's own models, found without listing every service botocore knows."""

from __future__ import annotations

from pathlib import Path

import botocore
import botocore.session
import pytest
from botocore.exceptions import UnknownServiceError
from botocore.loaders import JSONFileLoader, Loader

from intentbus.adapters.clients import AwsClients
from intentbus.adapters.service_loader import PlainJSONFileLoader, ServiceLoader


@pytest.fixture(autouse=True)
def _lambda_like(fake_aws_credentials: None) -> None:
    """Every client here is made with credentials and a region, as in a function."""


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


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1", "cn-north-1", "us-gov-west-1"])
@pytest.mark.parametrize("service", ["dynamodb", "events", "sqs", "s3", "iam", "cloudwatch"])
def test_a_client_reaches_the_endpoint_botocore_itself_resolves(
    service: str, region: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data files read as plain dicts (not botocore's ``OrderedDict``s) resolve the same endpoints,
    global services and other partitions included."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", region)
    ours = AwsClients().client(service)
    theirs = botocore.session.get_session().create_client(service)

    assert ours.meta.endpoint_url == theirs.meta.endpoint_url
    assert ours.meta.region_name == theirs.meta.region_name
    assert ours.meta.service_model.signing_name == theirs.meta.service_model.signing_name


def test_the_data_files_read_as_botocore_reads_them() -> None:
    """A stage's loader reads botocore's data files into plain dicts holding what botocore's own file
    loader reads from them (compared file by file: clients amend the loaded endpoints as they resolve)."""
    data = Path(botocore.__file__).parent / "data"
    ours = ServiceLoader.like(botocore.session.get_session().get_component("data_loader")).file_loader

    assert isinstance(ours, PlainJSONFileLoader)
    for name in ("endpoints", "partitions", "sdk-default-configuration", "dynamodb/2012-08-10/service-2"):
        read = ours.load_file(str(data / name))
        assert read == JSONFileLoader().load_file(str(data / name))
        assert type(read) is dict
