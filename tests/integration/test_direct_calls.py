"""The pipeline's calls on the in-process local cloud are answered by moto's handlers without HTTP, and
a caller sees exactly what moto answered over botocore's ordinary path: responses, error classes,
codes, messages and the modeled error fields."""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Callable, Iterator
from typing import Any, cast

import boto3
import botocore.session
import moto.core.responses  # loaded where json_post_setup._date_header runs: on moto's response path
import pytest
from botocore.exceptions import ClientError
from botocore.parsers import JSONParser
from hypothesis import example, given, settings
from hypothesis import strategies as st

from intentbus_local import attribute_parse, direct_calls, indexed_headers, json_post_setup
from intentbus_local.backend import InProcessMoto
from intentbus_local.indexed_headers import IndexedHeaders
from intentbus_local.pinning import Pins

REGION = "us-east-1"
_VARYING = {
    "RequestId",
    "HTTPHeaders",
    "MessageId",
    "EventId",
    "TableId",
    "CreationDateTime",
    "SentTimestamp",
}
"""Drawn afresh or read from the clock on each call."""


@pytest.mark.parametrize(
    "pins",
    [
        direct_calls.PINS,
        direct_calls.BOTOCORE_PINS,
        attribute_parse.PINS,
        attribute_parse.MOTO_PINS,
        indexed_headers.PINS,
        json_post_setup.PINS,
        json_post_setup.ACCOUNT_PINS,
    ],
    ids=["moto", "botocore", "botocore-parse", "moto-parse", "botocore-headers", "setup", "setup-account"],
)
def test_the_code_the_direct_path_stands_in_for_is_the_code_it_was_written_against(pins: Pins) -> None:
    assert pins.changed() == [], (
        f"code the direct path copies changed (found on {pins.found_on}): compare intentbus_local."
        "direct_calls and intentbus_local.attribute_parse with it, then update its digest"
    )
    assert attribute_parse.holds()
    assert attribute_parse._moto_holds()


def test_dynamodb_s_attribute_value_shape_takes_the_copy_in_botocore_s_model_and_moto_s() -> None:
    """Else the equivalence tests below would pass with the copy never taken."""
    from moto.core.utils import get_service_model

    answer = _dynamodb_model().operation_model("GetItem").output_shape
    request = get_service_model("dynamodb").operation_model("PutItem").input_shape
    assert answer is not None
    assert request is not None
    for item in (answer.members["Item"], request.members["Item"]):
        assert attribute_parse._is_attribute_value(item.value)


_scalar_value = st.one_of(
    st.text(max_size=4), st.booleans(), st.none(), st.integers(-3, 3), st.just("AAE="), st.just("not base64")
)
_one_member = st.builds(
    lambda tag, value: {tag: value}, st.sampled_from(["S", "N", "B", "BOOL", "NULL", "Z"]), _scalar_value
)
_one_set = st.builds(
    lambda tag, values: {tag: values},
    st.sampled_from(["SS", "NS", "BS"]),
    st.lists(st.one_of(st.text(max_size=3), st.just("AAE="), st.none(), st.integers()), max_size=3),
)
_attribute = st.recursive(
    st.one_of(
        _one_member,
        _one_set,
        st.builds(lambda a, b: {**a, **b}, _one_member, _one_set),
        st.none(),
        st.text(max_size=2),
    ),
    lambda inner: st.one_of(
        st.builds(lambda m: {"M": m}, st.dictionaries(st.text(max_size=3), inner, max_size=3)),
        st.builds(lambda items: {"L": items}, st.lists(inner, max_size=3)),
    ),
    max_leaves=12,
)


_header_name = st.sampled_from(["Host", "host", "HOST", "X-Amz-Target", "x-amz-target", "Date", "ß", "İ", ""])
_header_step = st.one_of(
    st.tuples(st.just("set"), _header_name, st.one_of(st.text(max_size=3), st.integers())),
    st.tuples(st.sampled_from(["get", "in", "[]", "del", "pop", "setdefault"]), _header_name, st.just("d")),
)


def _headers_after(headers: Any, steps: list[tuple[str, str, Any]]) -> list[Any]:
    """What each step answers (or raises), then the headers' names, items, length, repr and copy."""
    seen: list[Any] = []
    for step, name, value in steps:
        try:
            if step == "set":
                headers[name] = value
                seen.append(None)
            elif step == "get":
                seen.append((headers.get(name), headers.get(name, value)))
            elif step == "in":
                seen.append(name in headers)
            elif step == "[]":
                seen.append(headers[name])
            elif step == "del":
                del headers[name]
                seen.append(None)
            elif step == "pop":
                seen.append(headers.pop(name, value))
            else:
                seen.append(headers.setdefault(name, value))
        except KeyError as error:
            seen.append(("KeyError", str(error)))
    copied = headers.copy()
    seen += [list(headers), list(headers.items()), len(headers), repr(headers), type(copied), dict(copied)]
    return seen


@given(
    initial=st.lists(st.tuples(_header_name, st.text(max_size=3)), max_size=4),
    steps=st.lists(_header_step, max_size=12),
)
@example(initial=[("Host", "a"), ("host", "b")], steps=[("del", "HOST", "d"), ("set", "host", "c")])
def test_indexed_headers_answer_as_botocore_s_headers_dict(
    initial: list[tuple[str, str]], steps: list[tuple[str, str, Any]]
) -> None:
    """The same answers, errors, names in the same order and spelling, after any mix of writes."""
    from botocore.awsrequest import HeadersDict

    assert _headers_after(IndexedHeaders(initial), steps) == _headers_after(HeadersDict(initial), steps)
    assert _headers_after(IndexedHeaders(dict(initial)), steps) == _headers_after(
        HeadersDict(dict(initial)), steps
    )


def test_the_direct_path_s_headers_are_the_indexed_ones(clients: Callable[[str], Any]) -> None:
    """Else the equivalence above would hold for headers the path never uses."""
    seen: list[Any] = []
    sqs = clients("sqs")
    sqs.meta.events.register("after-call", lambda http_response, **_: seen.append(http_response.headers))
    sqs.create_queue(QueueName="indexed")
    assert direct_calls._headers_class() is IndexedHeaders
    assert [type(headers) for headers in seen] == [IndexedHeaders]
    assert seen[0]["X-AMZN-REQUESTID"] == seen[0]["x-amzn-requestid"]


@functools.cache
def _dynamodb_model() -> Any:
    return botocore.session.get_session().get_service_model("dynamodb")


@settings(deadline=None)  # the first example loads the service model
@given(items=st.lists(st.dictionaries(st.text(max_size=3), _attribute, max_size=4), max_size=3))
@example(items=[{"b": {"B": "AAE="}, "m": {"M": {"s": {"S": "x"}, "n": {"N": "1"}, "bs": {"BS": ["AAE="]}}}}])
@example(items=[{"l": {"L": [{"BOOL": True}, {"NULL": True}, {"SS": ["a"]}, None]}, "s": {"S": 1}}])
def test_attribute_values_are_parsed_as_botocore_s_own_parser_parses_them(items: list[Any]) -> None:
    """The same parsed answer, or the same exception, for wire forms it copies and every other one
    (binary, None, unknown or extra members, wrong types), through a Query and a BatchGetItem."""
    model = _dynamodb_model()
    bodies = [
        ("Query", {"Items": items, "Count": len(items)}),
        ("BatchGetItem", {"Responses": {"t": items}}),
        ("GetItem", {"Item": items[0] if items else {}}),
    ]
    for operation, body in bodies:
        output = model.operation_model(operation).output_shape
        assert output is not None
        response = {"status_code": 200, "headers": {}, "body": json.dumps(body).encode()}
        outcomes = []
        for parser in (attribute_parse.Parser(), JSONParser()):
            try:
                outcomes.append(("parsed", parser.parse(dict(response), output)))
            except Exception as error:  # the outcome compared is the exception's type
                outcomes.append(("raised", type(error).__name__))
        assert outcomes[0] == outcomes[1], (operation, body)


@pytest.fixture
def clients() -> Iterator[Callable[[str], Any]]:  # a session's ``client``
    backend = InProcessMoto()
    backend.start()
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    try:
        yield cast(Callable[[str], Any], session.client)
    finally:
        backend.stop()


def _calls(client: Callable[[str], Any], tag: str) -> list[Any]:
    """Each call's parsed response, or its error's class and response."""
    dynamodb, sqs, events = client("dynamodb"), client("sqs"), client("events")
    table, answers = f"t{tag}", []

    def call(method: Callable[..., Any], **params: Any) -> None:
        try:
            answers.append(method(**params))
        except ClientError as error:
            answers.append({"error": type(error).__name__, "response": error.response})

    call(
        dynamodb.create_table,
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    item = {"pk": {"S": "a"}, "b": {"B": b"\x00\x01"}, "n": {"N": "1.50"}, "l": {"L": [{"BOOL": True}]}}
    call(dynamodb.put_item, TableName=table, Item=item)
    call(
        dynamodb.put_item,
        TableName=table,
        Item={"pk": {"S": "a"}},
        ConditionExpression="attribute_not_exists(pk)",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    call(dynamodb.batch_get_item, RequestItems={table: {"Keys": [{"pk": {"S": "a"}}, {"pk": {"S": "z"}}]}})
    call(
        dynamodb.update_item,
        TableName=table,
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET n = n + :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )
    call(
        dynamodb.transact_write_items,
        TransactItems=[
            {
                "Put": {
                    "TableName": table,
                    "Item": {"pk": {"S": "a"}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {"Put": {"TableName": table, "Item": {"pk": {"S": "c"}}}},
        ],
    )
    call(dynamodb.get_item, TableName="missing", Key={"pk": {"S": "a"}})
    call(dynamodb.put_item, TableName=table, Item={"pk": {"S": ""}})
    call(dynamodb.scan, TableName=table)
    queue = sqs.create_queue(QueueName=f"q{tag}")["QueueUrl"]
    call(
        sqs.send_message,
        QueueUrl=queue,
        MessageBody="hi",
        MessageAttributes={"a": {"DataType": "String", "StringValue": "v"}},
    )
    call(sqs.send_message, QueueUrl=f"{queue}-missing", MessageBody="hi")
    call(sqs.receive_message, QueueUrl=queue, MessageAttributeNames=["All"])
    call(sqs.delete_message, QueueUrl=queue, ReceiptHandle="forged")
    call(
        events.put_events,
        Entries=[
            {"Source": "a", "DetailType": "b", "Detail": "{}"},
            {"Source": "a", "DetailType": "b", "Detail": "x"},
        ],
    )
    call(events.describe_event_bus, Name="missing")
    ecs = client("ecs")
    call(ecs.create_cluster, clusterName=f"t{tag}-cluster")
    call(ecs.describe_services, cluster=f"t{tag}-cluster", services=["missing"])
    call(ecs.update_service, cluster=f"t{tag}-cluster", service="missing", desiredCount=1)
    cloudwatch = client("cloudwatch")
    at = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
    dimensions = [{"Name": "ServiceName", "Value": f"t{tag}"}]
    call(
        cloudwatch.put_metric_data,
        Namespace="AWS/ECS",
        MetricData=[
            {"MetricName": "CPUUtilization", "Dimensions": dimensions, "Timestamp": at, "Value": 91.5},
            {"MetricName": "CPUUtilization", "Dimensions": dimensions, "Timestamp": at, "Value": 40.25},
        ],
    )
    call(
        cloudwatch.get_metric_statistics,
        Namespace="AWS/ECS",
        MetricName="CPUUtilization",
        Dimensions=dimensions,
        StartTime=at - datetime.timedelta(minutes=5),
        EndTime=at + datetime.timedelta(minutes=5),
        Period=60,
        Statistics=["Average", "Maximum", "SampleCount"],
    )
    call(cloudwatch.list_metrics, Namespace="AWS/ECS", Dimensions=dimensions)
    call(cloudwatch.get_dashboard, DashboardName="missing")
    return answers


def _comparable(answers: list[Any], tag: str) -> Any:
    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items() if k not in _VARYING and k != "ReceiptHandle"}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    return json.loads(
        json.dumps(scrub(answers), default=repr).replace(f"t{tag}", "t").replace(f"q{tag}", "q")
    )


def test_a_call_answered_directly_sees_what_moto_answers_over_http(
    clients: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[str] = []
    dispatch = direct_calls._dispatch

    def counted(*args: Any) -> Any:
        answered.append(args[1])
        return dispatch(*args)

    monkeypatch.setattr(direct_calls, "_dispatch", counted)

    with direct_calls.over_http():
        expected = _comparable(_calls(clients, "A"), "A")
    assert answered == []
    got = _comparable(_calls(clients, "B"), "B")

    assert got == expected
    assert len(answered) == len(got) + 1  # and CreateQueue
    failed = got[5]
    assert failed["error"] == "TransactionCanceledException"
    assert [r["Code"] for r in failed["response"]["CancellationReasons"]] == [
        "ConditionalCheckFailed",
        "None",
    ]
    assert got[2]["error"] == "ConditionalCheckFailedException"
    assert got[2]["response"]["Item"]["pk"] == {"S": "a"}
    *_, ecs_failed, _, statistics, metrics, cloudwatch_failed = got
    assert ecs_failed["error"] == "ServiceNotFoundException"
    (datapoint,) = statistics["Datapoints"]
    assert (datapoint["Maximum"], datapoint["SampleCount"]) == (91.5, 2.0)
    assert [m["MetricName"] for m in metrics["Metrics"]] == ["CPUUtilization"]
    assert cloudwatch_failed["response"]["Error"]["Code"] == "ResourceNotFound"


def test_no_http_request_is_built_while_the_cloud_runs_and_the_ordinary_path_returns_after(
    clients: Callable[[str], Any],
) -> None:
    sqs = clients("sqs")
    sent: list[str] = []
    sqs.meta.events.register_first("before-send", lambda request, **_: sent.append(request.url))

    sqs.create_queue(QueueName="direct")

    assert sent == []
    with direct_calls.over_http():
        sqs.create_queue(QueueName="over-http")
    assert len(sent) == 1


@settings(deadline=None)
@given(items=st.lists(st.dictionaries(st.text(max_size=3), _attribute, max_size=4), min_size=1, max_size=3))
@example(items=[{"b": {"B": "AAE="}, "m": {"M": {"s": {"S": "x"}, "n": {"N": "1"}, "bs": {"BS": ["AAE="]}}}}])
@example(items=[{"l": {"L": [{"BOOL": True}, {"NULL": True}, {"SS": ["a"]}, None]}, "s": {"S": 1}}])
def test_attribute_values_in_a_request_are_read_as_moto_s_own_parser_reads_them(items: list[Any]) -> None:
    """moto's params for a PutItem and a TransactWriteItems: the same, or the same exception."""
    from moto.core import parse
    from moto.core.utils import get_service_model

    attribute_parse.apply()
    assert parse.PROTOCOL_PARSERS["json"] is attribute_parse.request_parser()
    model = get_service_model("dynamodb")
    bodies = [
        ("PutItem", {"TableName": "t", "Item": items[0]}),
        ("TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "t", "Item": i}} for i in items]}),
    ]
    for operation, body in bodies:
        request = {"method": "POST", "values": {}, "headers": {}, "body": json.dumps(body).encode()}
        request |= {"url_path": "/", "url_params": {}}
        outcomes = []
        for parser_class in (attribute_parse.request_parser(), parse.JSONParser):
            parser = parser_class(model.operation_model(operation), map_type=dict)
            try:
                outcomes.append(("parsed", parser.parse(cast(Any, dict(request)))))
            except Exception as error:  # the outcome compared is the exception's type
                outcomes.append(("raised", type(error).__name__))
        assert outcomes[0] == outcomes[1], (operation, body)


_PIPELINE_CALLS_ONLY = """
import sys
import boto3
from intentbus_local.backend import InProcessMoto

backend = InProcessMoto()
backend.start()
try:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    session.client("dynamodb").list_tables()
    session.client("sqs").list_queues()
    session.client("events").list_event_buses()
    print(sorted(name for name in ("moto.ecs", "moto.ec2") if name in sys.modules))
    session.client("ecs").list_clusters()
    print(sorted(name for name in ("moto.ecs", "moto.ec2") if name in sys.modules))
finally:
    backend.stop()
"""


def test_a_cloud_that_never_calls_ecs_does_not_import_moto_s_ecs_and_ec2() -> None:
    """Importing moto's ECS loads its EC2 models, about a second of CPU: the direct path imports a
    service's handler only when that service is first called (a fresh interpreter, since other tests
    import ECS)."""
    import subprocess
    import sys

    answer = subprocess.run(
        [sys.executable, "-c", _PIPELINE_CALLS_ONLY], capture_output=True, text=True, check=True, timeout=120
    )
    assert answer.stdout.splitlines() == ["[]", "['moto.ec2', 'moto.ecs']"]


_HANDLERS = {
    "dynamodb": ("moto.dynamodb.responses", "DynamoHandler", "PutItem"),
    "sqs": ("moto.sqs.responses", "SQSResponse", "SendMessage"),
    "events": ("moto.events.responses", "EventsHandler", "PutEvents"),
    "ecs": ("moto.ecs.responses", "EC2ContainerServiceResponse", "DescribeServices"),
    "cloudwatch": ("moto.cloudwatch.responses", "CloudWatchResponse", "ListMetrics"),
}
_body = st.one_of(
    st.sampled_from(
        [
            b"",
            b"{}",
            b'{"TableName": "t", "Item": {"pk": {"S": "a&AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE"}}}',
            b'{"Entries": [{"Source": "a", "DetailType": "b", "Detail": "x=1;Entries=2"}]}',
            b'{"QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/q", "MessageBody": "hi"}',
            b"\xff\xfe not utf-8",
            b"not json",
        ]
    ),
    st.text(max_size=20).map(str.encode),
)
_header_values = st.fixed_dictionaries(
    {},
    optional={
        "Content-Type": st.sampled_from(
            ["application/x-amz-json-1.0", "application/x-amz-json-1.1", "application/cbor", "text/plain"]
        ),
        "Host": st.just("dynamodb.us-east-1.amazonaws.com"),
        "User-Agent": st.sampled_from(["Botocore/1.44.8", "aws-sdk region/eu-west-2 x"]),
        "Authorization": st.sampled_from(
            ["AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/eu-west-1/sqs/aws4_request, x", "x"]
        ),
        "x-moto-account-id": st.sampled_from(["111111111111", "222222222222"]),
    },
)


def _ready(
    service: str, url: str, headers: dict[str, str], body: bytes, how: Callable[[Any, Any], None]
) -> dict[str, Any]:
    """A handler's attributes once readied (or the error), and what readying did to the request."""
    import importlib

    module, name, operation = _HANDLERS[service]
    handler = getattr(importlib.import_module(module), name)()
    handler._get_action = lambda: operation
    request = direct_calls._JsonPost(url, IndexedHeaders(headers), body)
    try:
        how(handler, request)
    except Exception as error:  # the outcome compared is the exception's type and text
        return {"raised": (type(error).__name__, str(error))}
    state = {
        key: value
        for key, value in vars(handler).items()
        if key not in ("_get_action", "normalized_request", "headers")
    }
    assert handler.normalized_request is request
    return state | {"environ": request.environ, "headers": dict(handler.headers)}


@settings(deadline=None, max_examples=150)
@given(
    service=st.sampled_from(sorted(_HANDLERS)),
    url=st.sampled_from(
        [
            "https://dynamodb.us-east-1.amazonaws.com/",
            "https://sqs.eu-west-1.amazonaws.com/",
            "https://events.amazonaws.com/",
            "http://localhost:5000/x?a=1&b",
        ]
    ),
    headers=_header_values,
    body=_body,
    account_variable=st.sampled_from([None, "333333333333"]),
)
def test_a_handler_readied_by_the_direct_path_is_as_moto_readies_it(
    service: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    account_variable: str | None,
) -> None:
    """The same attributes (query string, body, region, date, parameters, account...) or the same error,
    the same request environ, for JSON, CBOR and other bodies, with and without an account set."""

    at = datetime.datetime(2026, 1, 2, 3, 4, 5, 678)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(moto.core.responses, "utcnow", lambda: at)
        if account_variable is None:
            patched.delenv("MOTO_ACCOUNT_ID", raising=False)
        else:
            patched.setenv("MOTO_ACCOUNT_ID", account_variable)
        moto_s = _ready(service, url, headers, body, lambda handler, request: handler.setup_class(request))
        ours = _ready(service, url, headers, body, json_post_setup.setup)
    assert ours == moto_s


@given(
    moments=st.lists(
        st.datetimes(min_value=datetime.datetime(2000, 1, 1), max_value=datetime.datetime(2100, 1, 1)),
        max_size=6,
    )
)
def test_the_date_header_is_werkzeug_s_for_every_moment(moments: list[datetime.datetime]) -> None:
    from werkzeug.http import http_date

    for moment in moments + [m.replace(microsecond=999_999) for m in moments]:
        assert json_post_setup._date_header(moment) == http_date(moment)
    aware = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert json_post_setup._date_header(aware) == http_date(aware) == "Thu, 01 Jan 2026 10:00:00 GMT"


def test_an_access_key_s_account_is_found_as_moto_finds_it(clients: Callable[[str], Any]) -> None:
    from moto.iam.models import get_account_id_from

    iam = clients("iam")
    iam.create_user(UserName="u")
    key = iam.create_access_key(UserName="u")["AccessKey"]["AccessKeyId"]
    for access_key in (key, "AKIAEXAMPLE", "AKIAIOSFODNN7EXAMPLE"):
        assert json_post_setup._account_id_from(access_key) == get_account_id_from(access_key)


def test_every_direct_handler_is_readied_by_the_copy(clients: Callable[[str], Any]) -> None:
    """Else the comparison above would hold for a copy the path never uses."""
    import importlib

    for module, name, _ in _HANDLERS.values():
        assert json_post_setup.holds_for(getattr(importlib.import_module(module), name))
