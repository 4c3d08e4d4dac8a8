"""Endpoint parameters resolved by plan (intentbus.adapters.endpoint_params) are botocore's own, call for
call: every operation of the services the runtime calls, S3 (static context parameters and its own
``before-endpoint-resolution`` handler) included, with and without an account id in the credentials."""

from __future__ import annotations

import dataclasses
from typing import Any

import botocore.session
import jmespath  # type: ignore[import-untyped]
import pytest
from botocore.config import Config

from intentbus.adapters import endpoint_params
from intentbus.adapters.clients import AwsClients

SERVICES = ("dynamodb", "events", "sqs", "s3", "secretsmanager", "cloudwatch", "ecs")

_ITEM = {"pk": {"S": "T#t#RUN#r"}, "sk": {"S": "LOG#x"}}
_DYNAMODB_ARGS: dict[str, dict[str, Any]] = {
    "BatchGetItem": {"RequestItems": {"table-a": {"Keys": [_ITEM]}, "table-b": {"Keys": [_ITEM]}}},
    "BatchWriteItem": {"RequestItems": {"table-a": [{"PutRequest": {"Item": _ITEM}}]}},
    "TransactWriteItems": {
        "TransactItems": [
            {"Put": {"TableName": "table-a", "Item": _ITEM}},
            {"ConditionCheck": {"TableName": "table-b", "Key": _ITEM, "ConditionExpression": "x"}},
            {"Update": {"TableName": "table-a", "Key": _ITEM, "UpdateExpression": "SET v = :v"}},
        ]
    },
    "TransactGetItems": {"TransactItems": [{"Get": {"TableName": "table-a", "Key": _ITEM}}]},
}


def _client(service: str, account_id: str | None, **config: Any) -> Any:
    session = botocore.session.Session()
    return session.create_client(
        service,
        region_name=config.pop("region", "us-east-1"),
        aws_access_key_id="ASIATESTTESTTEST",
        aws_secret_access_key="secret",
        aws_session_token="token",
        aws_account_id=account_id,
        config=Config(**config),
    )


def _call_args(service: str, operation: Any) -> list[dict[str, Any]]:
    """No arguments; every top-level string member named; the DynamoDB shapes an operation context
    parameter reads."""
    named = (
        {
            name: f"{name.lower()}-1"
            for name, shape in operation.input_shape.members.items()
            if shape.type_name == "string"
        }
        if operation.input_shape is not None
        else {}
    )
    candidates = [{}, named]
    if service == "dynamodb" and operation.name in _DYNAMODB_ARGS:
        candidates.append(_DYNAMODB_ARGS[operation.name])
    if service == "s3":
        candidates.append({"Bucket": "my-bucket", "Key": "a/b"})
        candidates.append({"Bucket": "arn:aws:s3:us-east-1:123456789012:accesspoint/ap", "Key": "k"})
    return candidates


@pytest.mark.parametrize("service", SERVICES)
@pytest.mark.parametrize(
    ("account_id", "config"),
    [(None, {}), ("123456789012", {}), ("123456789012", {"region": "us-west-2", "use_fips_endpoint": True})],
)
def test_planned_parameters_and_endpoints_are_botocores(
    service: str, account_id: str | None, config: dict[str, Any]
) -> None:
    planned = endpoint_params.install(_client(service, account_id, **dict(config)))
    plain = _client(service, account_id, **dict(config))
    model = plain.meta.service_model
    resolver = planned._ruleset_resolver
    assert "_get_provider_params" in vars(resolver)
    for name in model.operation_names:
        operation = model.operation_model(name)
        for args in _call_args(service, operation):
            ours = _outcome(resolver._get_provider_params, operation, args)
            theirs = _outcome(plain._ruleset_resolver._get_provider_params, operation, args)
            assert ours == theirs, (service, name, args)
            assert _endpoint(planned, operation, args) == _endpoint(plain, operation, args), (service, name)


def _outcome(resolve: Any, operation: Any, args: dict[str, Any]) -> Any:
    try:
        return resolve(operation, dict(args), {})
    except Exception as error:  # the same error, for the same arguments
        return type(error).__name__, str(error)


def _endpoint(client: Any, operation: Any, args: dict[str, Any]) -> Any:
    context: dict[str, Any] = {}
    return _outcome(
        lambda *_: client._resolve_endpoint_ruleset(operation, dict(args), context), operation, args
    ), context


def test_the_runtimes_clients_resolve_by_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIATESTTESTTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    client = AwsClients().client("dynamodb")
    assert "_get_provider_params" in vars(client._ruleset_resolver)


def test_a_resolver_without_the_internals_read_is_left_alone() -> None:
    class Bare:
        _ruleset_resolver = object()

    client = Bare()
    assert endpoint_params.install(client) is client
    assert "_get_provider_params" not in vars(client._ruleset_resolver.__class__)


_SHAPES: list[Any] = [
    None,
    "table",
    [],
    {},
    {"t": 1},
    [{}],
    [None],
    ["x"],
    [{"Put": None}],
    [{"Put": {}}],
    [{"Put": "x"}],
    [{"Put": {"TableName": None}}],
    [{"Put": {"TableName": ["a", "b"]}}],
    [{"Put": {"TableName": 3}}],
    [{"Put": {"TableName": ""}}],
    [{"Put": {"TableName": "a"}, "Update": {"TableName": "b"}, "ConditionCheck": {"TableName": "c"}}],
    [{"Delete": {"TableName": "a"}}, {"Get": {"TableName": "b"}}, {"Put": {"TableName": "a"}}],
    [[{"Put": {"TableName": "a"}}]],
]


@pytest.mark.parametrize("expression", sorted(endpoint_params._READINGS))
@pytest.mark.parametrize("member", ["RequestItems", "TransactItems", "Other"])
def test_a_direct_reading_gives_what_jmespath_gives(expression: str, member: str) -> None:
    read = endpoint_params._reading(expression)
    for shape in _SHAPES:
        args = {member: shape}
        ours = _outcome(lambda _, given, __: read(given), None, args)
        theirs = _outcome(lambda _, given, __: jmespath.search(expression, given), None, args)
        assert ours == theirs, shape


def test_a_parameter_source_holds_its_fields_and_refuses_changes() -> None:
    """``_Source`` (a slotted ``Frozen`` class, once a ``NamedTuple``) keeps each field as given, by position
    or by name, and refuses assignment and deletion."""
    read = endpoint_params._reading("TableName")
    fields: dict[str, Any] = {
        "static": None,
        "member": "TableName",
        "path": read,
        "client_name": "Bucket",
        "builtin": "AWS::Region",
    }
    by_position = endpoint_params._Source("Region", *fields.values())
    by_name = endpoint_params._Source(name="Region", **fields)

    for source in (by_position, by_name):
        assert source.name == "Region"
        assert {name: getattr(source, name) for name in fields} == fields
        with pytest.raises(dataclasses.FrozenInstanceError):
            source.name = "Other"  # type: ignore[misc]  # refused by type checkers too
        with pytest.raises(dataclasses.FrozenInstanceError):
            del source.builtin
    assert not hasattr(by_name, "__dict__")
