"""moto's ``setup_class`` for the JSON POSTs the direct path makes, with what is fixed per URL done once.

``BaseResponse.setup_class`` (found on moto 5.2.6) readies a handler for every request: it parses the
URL and the query string, decodes the body and reads it as a form (a JSON handler's ``querystring``),
finds the region, formats a ``Date`` header, parses the parameters, and looks the caller's account up
in IAM. For a ``direct_calls._JsonPost`` (no form, no files, no ``Content-Encoding``) ``setup`` sets the
same attributes to the same values with the same side effects, in moto's order, and differs only in:

* the URL parsed once per URL (``urlparse`` answers an immutable tuple), and the URL's empty query
  string not parsed (``parse_qs`` of an empty string adds nothing);
* the ``Date`` header formatted once per second (``http_date`` of a naive datetime reads it to the
  second);
* the account found without the lock-free lookups' overhead: ``MOTO_ACCOUNT_ID`` read from
  ``os.environ``'s own dict, and IAM's backends looked up with ``dict.get`` where moto's
  ``AccountSpecificBackend.__getitem__`` would return the same entry (a missing one is made by moto's
  code, as before).

The body is still decoded and read with ``parse_qsl`` (``get_access_key``, a handler without automated
parameter parsing and ``request_json`` read that ``querystring``), and the region, parameters, access
key and the visit IAM records are moto's own. A handler class that overrides any of it, or a moto whose
code moved (``PINS``), gets moto's ``setup_class``. Compared with moto's on generated requests in
tests/integration/test_direct_calls.py.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections import OrderedDict
from datetime import datetime
from typing import Any
from urllib.parse import ParseResult, urlparse

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.core.responses.BaseResponse.setup_class": "0650e29fa512aad1",
        "moto.core.responses.BaseResponse.decompress_request_body": "c054a900806c9620",
        "moto.core.responses.BaseResponse.get_current_account": "73816bc147411960",
    },
)
"""The handler's code this copies (a handler class must inherit it unchanged)."""
ACCOUNT_PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.iam.models.get_account_id_from": "83d4b96f7c5b4fc5",
        "moto.core.base_backend.AccountSpecificBackend.__getitem__": "b10167294fc00376",
    },
)
"""How moto finds an access key's account, which ``_account_id_from`` copies."""

_ENVIRON = type(os.environ)
_ENCODED_ACCOUNT_VARIABLE = os.environ.encodekey("MOTO_ACCOUNT_ID")


@functools.cache
def holds_for(handler_class: type) -> bool:
    """Whether ``handler_class`` readies a request with moto's code as found (checked once a class)."""
    return PINS.inherited_by(handler_class) and PINS.holds() and ACCOUNT_PINS.holds()


@functools.lru_cache(maxsize=64)
def _parsed_url(url: str) -> ParseResult:
    return urlparse(url)


_last_date: list[tuple[datetime | None, str]] = [(None, "")]


def _date_header(now: Any) -> str:
    responses: Any = sys.modules["moto.core.responses"]
    if type(now) is not datetime or now.tzinfo is not None:
        return responses.http_date(now)  # type: ignore[no-any-return]
    second = now.replace(microsecond=0)
    found = _last_date[0]
    if found[0] != second:
        found = (second, responses.http_date(now))
        _last_date[0] = found
    return found[1]


def _account_id_from(access_key: str) -> str:
    """``moto.iam.models.get_account_id_from``, each account's partition backend taken from its dict."""
    models: Any = sys.modules["moto.iam.models"]
    for account_id, account in list(models.iam_backends.items()):
        for partition in models.PARTITION_NAMES:
            backend = dict.get(account, partition)
            if backend is None:
                backend = account[partition]
            if access_key in backend.access_keys:
                return account_id  # type: ignore[no-any-return]
    return models.DEFAULT_ACCOUNT_ID  # type: ignore[no-any-return]


def _current_account(handler: Any) -> str:
    """``BaseResponse.get_current_account``."""
    environ: Any = os.environ
    if type(environ) is _ENVIRON:
        account_variable_set = _ENCODED_ACCOUNT_VARIABLE in vars(environ)["_data"]
    else:
        account_variable_set = "MOTO_ACCOUNT_ID" in environ
    if account_variable_set:
        return environ["MOTO_ACCOUNT_ID"]  # type: ignore[no-any-return]
    if "x-moto-account-id" in handler.headers:
        return handler.headers["x-moto-account-id"]  # type: ignore[no-any-return]
    return _account_id_from(handler.get_access_key())


def _querystring(responses: Any, parsed: ParseResult, body: Any, use_raw_body: bool, headers: Any) -> Any:
    """What moto's ``setup_class`` makes the handler's ``querystring`` of a request without a form."""
    querystring: dict[str, Any] = OrderedDict()
    if parsed.query:
        querystring.update(responses.parse_qs(parsed.query, keep_blank_values=True))
    if not querystring and body and not use_raw_body:
        # as moto: a body that is no query string adds nothing
        with contextlib.suppress(UnicodeEncodeError, UnicodeDecodeError, AttributeError):
            pairs = responses.parse_qsl(body, keep_blank_values=True)
            querystring.update(OrderedDict((key, [value]) for key, value in pairs))
    if not querystring:
        querystring.update(headers)
    return querystring


def setup(handler: Any, request: Any) -> None:
    """``handler.setup_class(request)`` for a ``direct_calls._JsonPost``."""
    if request.content_encoding is not None or request.form or request.files:
        handler.setup_class(request)  # not the request this copies
        return
    responses: Any = sys.modules["moto.core.responses"]
    from moto.iam.models import mark_account_as_visited
    from moto.utilities.constants import APPLICATION_CBOR

    use_raw_body = handler.use_raw_body
    if request.mimetype == APPLICATION_CBOR:
        use_raw_body = True
    handler.is_werkzeug_request = request.from_wsgi_server
    full_url = request.raw_url
    headers = request.headers
    handler.normalized_request = request
    parsed = _parsed_url(full_url)
    handler.parsed_url = parsed
    body = request.data
    handler.body = body
    handler.form_data = request.form
    handler.raw_body = body
    if isinstance(body, bytes) and not use_raw_body:
        body = body.decode("utf-8")
        handler.body = body
    querystring = _querystring(responses, parsed, body, use_raw_body, headers)
    handler.uri = full_url
    handler.path = parsed.path
    handler.raw_path = request.raw_path
    handler.querystring = querystring
    handler.data = querystring
    handler.method = request.method
    handler.region = handler.get_region_from_url(request, full_url)
    handler.partition = responses.get_partition(handler.region)
    handler.uri_match = {}
    if "host" not in request.headers:
        request.environ["HTTP_HOST"] = parsed.netloc
    handler.headers = request.headers
    handler.response_headers = {"server": "amazon.com"}
    if not handler.is_werkzeug_request:
        handler.response_headers["date"] = _date_header(responses.utcnow())
    if handler.automated_parameter_parsing and handler._get_action():
        handler.parse_parameters(request)
    handler.access_key = handler.get_access_key()
    handler.current_account = _current_account(handler)
    mark_account_as_visited(
        account_id=handler.current_account,
        access_key=handler.access_key,
        service=handler.service_name,
        region=handler.region,
    )
