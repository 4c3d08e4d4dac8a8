"""The pipeline's calls answered by moto's handlers straight from botocore, with no HTTP in between.

On the in-process local cloud a DynamoDB, SQS, EventBridge, ECS or CloudWatch call (the last two: the
seed service's tools) went:
botocore serializes it, builds and prepares an HTTP request, asks its retry handler, emits
``before-send``; moto's stubber matches the URL against every service's patterns, builds a werkzeug
request (a WSGI environ), and its handler parses that back (moto's own parser), runs the backend and
serializes the answer; botocore parses it. About 1.2 ms a call, two thirds of it neither the backend's
work nor the two wire formats.

While an in-process cloud runs, a ``before-call`` handler for those five services answers instead: the
request botocore serialized (its parameters validated, its body the wire body) goes to the handler class
moto's own URL routing picks for that endpoint, through moto's ``setup_class`` (as
intentbus_local.json_post_setup copies it, with what is fixed per URL done once) and ``call_action``
(moto's parser, backend, serializer and error responses as they are), on a small stand-in for the
werkzeug request that answers what those read of a JSON POST. The answer is then parsed by botocore's
parser for the protocol, with the modeled error fields added as botocore's endpoint adds them, so a
caller sees what it saw before: the same parsed response, the same ``ClientError`` subclass with its
code, message and ``CancellationReasons`` (a DynamoDB attribute value is taken as the copy botocore's
parser makes of it: intentbus_local.attribute_parse; request and response headers are botocore's
``HeadersDict`` with a lowercase index: intentbus_local.indexed_headers). Calls go through
``BaseClient._make_api_call``, where the fault harness records and injects (intentbus_faults.calls).

Not played on this path: botocore's HTTP-level events (``before-send``, ``before-parse``: botocore's
own handlers of it are S3's and SSO-OIDC's; ``response-received``; ``needs-retry``: moto never
throttles, so nothing was retried), the X-Ray SDK's trace header on the HTTP request (its subsegment
is made around ``_make_api_call`` as before) and moto's request recorder (off unless asked for).
Every other service, server mode, a stopped cloud and ``over_http()`` take the ordinary path; this
module is tooling, nothing of it ships to Lambda. Pinned to the moto and botocore code it stands in
for (``PINS``, ``BOTOCORE_PINS``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, cast
from urllib.parse import urlsplit

import botocore
import botocore.handlers
from botocore.awsrequest import AWSResponse, HeadersDict
from botocore.model import OperationModel
from botocore.parsers import ResponseParserFactory

from intentbus_local import attribute_parse, indexed_headers, json_post_setup
from intentbus_local.indexed_headers import IndexedHeaders
from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.core.botocore_stubber.BotocoreStubber.__call__": "6cbb7bf98afec5c8",
        "moto.core.botocore_stubber.BotocoreStubber.process_request": "f79a1a778c7e755f",
        "moto.core.request.Request.from_primitives": "4cfb35d5fb26843a",
        "moto.core.responses.BaseResponse.setup_class": "0650e29fa512aad1",
        "moto.core.responses.BaseResponse._dispatch": "446e22484251a00b",
        "moto.core.responses.BaseResponse._get_action": "e19a61055fb096c0",
    },
)
"""What the path copies of moto: the stubber's routing and response, the request moto builds, and the
parts of the handler that read it (the digests are checked by tests/integration/test_direct_calls.py)."""
BOTOCORE_PINS = Pins(
    found_on="botocore 1.44.8",
    sources={
        "botocore.client.BaseClient._make_api_call": "75ba491f61ffbd4e",
        "botocore.endpoint.Endpoint._do_get_response": "e1821119dedea32b",
        "botocore.endpoint.Endpoint._send_request": "af914535237dd087",
        "botocore.endpoint.Endpoint._add_modeled_error_fields": "b1920c6acf170ec0",
    },
)
"""What it copies of botocore: how a response is parsed, and what answering ``before-call`` skips."""

DIRECT_SERVICES = ("dynamodb", "sqs", "eventbridge", "ecs", "cloudwatch")
"""botocore's hyphenized service ids, as in ``before-call.<service id>.<operation>``."""
_running = [0]
_parsers = ResponseParserFactory()
_MISSING = object()


@functools.cache
def _pins_hold() -> bool:
    """Whether moto's and botocore's code is the code this path copies (else botocore's ordinary path)."""
    return PINS.holds() and BOTOCORE_PINS.holds()


def started() -> None:
    _running[0] += 1


def stopped() -> None:
    _running[0] = max(0, _running[0] - 1)


def answering() -> bool:
    """Whether calls are answered on this path now: a cloud running, not ``over_http``, the pins holding."""
    return bool(_running[0]) and _pins_hold()


@contextlib.contextmanager
def over_http() -> Iterator[None]:
    """Botocore's ordinary path while open, cloud running or not: for whoever records the wire
    (the stage bench's capture of moto's HTTP responses)."""
    running = _running[0]
    _running[0] = 0
    try:
        yield
    finally:
        _running[0] = running


class _JsonPost:
    """What moto's ``setup_class``, ``parse_parameters`` and ``get_region_from_url`` read of a request
    (moto.core.request.Request, a werkzeug request), for a JSON (or, CloudWatch's, CBOR) POST from
    botocore with no form data."""

    from_wsgi_server = False
    method = "POST"
    content_encoding: str | None = None
    form: ClassVar[Mapping[str, str]] = MappingProxyType({})
    files: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    values: ClassVar[Mapping[str, str]] = MappingProxyType({})

    def __init__(self, url: str, headers: HeadersDict, body: bytes) -> None:
        parts = urlsplit(url)
        self.raw_url = url
        self.path = parts.path or "/"
        self.raw_path = self.path
        self.headers = headers
        self.data = body
        self.environ: dict[str, Any] = {}
        content_type = headers.get("Content-Type", "")
        self.content_type = content_type
        self.mimetype = content_type.split(";", 1)[0].strip().lower()


def _answer(model: OperationModel, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, Any] | None:
    if not _running[0] or not _pins_hold():
        return None
    body = params.get("body")
    if not isinstance(body, bytes) or params.get("method") != "POST" or params.get("query_string"):
        return None
    url = params["url"]
    handler_class = _handler_for(url.split("?", 1)[0])
    if handler_class is None:
        return None
    headers = _headers_class()()
    for name, value in params["headers"].items():
        headers[name] = value.decode() if isinstance(value, bytes) else value
    status, response_headers, response_body = _dispatch(handler_class, model.name, url, headers, body)
    http = _aws_response(url, status, response_headers, response_body)
    return http, _parsed(http, model)


_DIRECT_HANDLERS = {
    "dynamodb": ("moto.dynamodb.responses", "DynamoHandler"),
    "events": ("moto.events.responses", "EventsHandler"),
    "sqs": ("moto.sqs.responses", "SQSResponse"),
    "ecs": ("moto.ecs.responses", "EC2ContainerServiceResponse"),
    "cloudwatch": ("moto.cloudwatch.responses", "CloudWatchResponse"),
}
"""moto's handler class for each service answered directly, imported only when its endpoint is first
called: importing moto's ECS loads its EC2 models (about a second of CPU), which a cloud that never
calls ECS should not pay."""


@functools.lru_cache(maxsize=64)
def _handler_for(clean_url: str) -> Any:
    """The moto handler class that moto's stubber routes this endpoint to, if it is one of ours
    (the same pattern walk as ``BotocoreStubber.process_request``, once per endpoint)."""
    from moto import backend_index, backends
    from moto.core.base_backend import BackendDict
    from moto.core.models import DEFAULT_ACCOUNT_ID

    for service, pattern in backend_index.backend_url_patterns:
        if not pattern.match(clean_url):
            continue
        if service not in _DIRECT_HANDLERS:
            return None
        backend_dict = backends.get_backend(service)  # type: ignore[call-overload]
        if not isinstance(backend_dict, BackendDict):
            return None
        module, name = _DIRECT_HANDLERS[service]
        ours = getattr(importlib.import_module(module), name)
        regions = backend_dict[DEFAULT_ACCOUNT_ID]
        backend = regions["us-east-1"] if "us-east-1" in regions else regions["aws"]
        for url, method_to_execute in backend.urls.items():
            if re.compile(url).match(clean_url):
                owner: Any = getattr(method_to_execute, "__self__", None)
                if owner is not ours:
                    return None
                return owner if method_to_execute.__func__ is owner.dispatch.__func__ else None
        return None
    return None


def _dispatch(
    handler_class: Any, operation: str, url: str, headers: HeadersDict, body: bytes
) -> tuple[int, Any, Any]:
    from werkzeug.exceptions import HTTPException  # what moto.core.exceptions re-exports

    handler = handler_class()
    # The operation is botocore's own; moto would find the same one by matching the request
    # against the service's routes, up to three times a call.
    handler._get_action = lambda: operation
    request = _JsonPost(url, headers, body)
    try:
        if json_post_setup.holds_for(handler_class):
            json_post_setup.setup(handler, request)  # moto's _dispatch: setup_class, then call_action
            status, response_headers, response_body = handler.call_action()
        else:
            status, response_headers, response_body = handler._dispatch(request)
    except HTTPException as error:  # as BotocoreStubber.process_request does
        return error.code or 500, error.get_headers(), error.get_body()
    return status, response_headers, response_body


def parsed_answer(model: OperationModel, url: str, status: int, headers: Any, body: str | bytes) -> Any:
    """What botocore's parser makes of moto's answer to ``model``'s operation, as this path parses it."""
    return _parsed(_aws_response(url, status, headers, body), model)


def _aws_response(url: str, status: int, headers: Any, body: str | bytes) -> AWSResponse:
    from moto.core.botocore_stubber import MockRawResponse

    response = AWSResponse(url, status, cast(Any, ()), MockRawResponse(body))
    response.headers = _headers_class()(headers)  # in place of the HeadersDict it made of none
    return response


@functools.cache
def _headers_class() -> type[HeadersDict]:
    """Request and response headers as botocore's ``HeadersDict``, looked up through a lowercase index
    while botocore's code is the code it was written against (intentbus_local.indexed_headers)."""
    return IndexedHeaders if indexed_headers.PINS.holds() else HeadersDict


def _parsed(http: AWSResponse, model: OperationModel) -> Any:
    """As botocore's ``Endpoint._do_get_response`` and ``_send_request`` make it of a response."""
    from botocore.endpoint import convert_to_response_dict

    response_dict = convert_to_response_dict(http, model)
    protocol = model.service_model.resolved_protocol
    json_copies = protocol == "json" and attribute_parse.holds()
    parser = attribute_parse.Parser() if json_copies else _parsers.create_parser(protocol)
    parsed = parser.parse(response_dict, model.output_shape)  # type: ignore[arg-type]
    if http.status_code >= 300:
        code = parsed.get("Error", {}).get("Code")
        error_shape = None if code is None else model.service_model.shape_for_error_code(code)
        if error_shape is not None:
            parsed.update(parser.parse(response_dict, error_shape))
    metadata = parsed.get("ResponseMetadata")
    if isinstance(metadata, dict):
        metadata["RetryAttempts"] = 0
    return parsed


for _service in DIRECT_SERVICES:
    _spec = (f"before-call.{_service}", _answer, botocore.handlers.REGISTER_LAST)
    if _spec not in botocore.handlers.BUILTIN_HANDLERS:
        botocore.handlers.BUILTIN_HANDLERS.append(_spec)
