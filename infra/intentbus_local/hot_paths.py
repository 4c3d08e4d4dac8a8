"""Caches for moto's hot paths, installed with the moto fixes before the local cloud deploys.

Each memoizes a function whose answer depends only on its arguments, so none changes what moto
answers: ``jsonpath_ng.ext.parse`` (moto's EventBridge builds a fresh yacc parser for the same few
JSONPath expressions on every event it delivers to SQS), ``camelcase_to_underscores`` (every request's
action and parameter names), ``method_names_from_class`` (every response dispatch) and, inside
``moto.core.utils``, ``utcfromtimestamp`` (``unix_time`` rebuilds the epoch on every call). It also
installs sqs_hot_paths (SQS work in proportion to the request, not the queue's depth),
response_keys (the response serializer's key lookups), dynamodb_hot_paths (each expression text
lexed or parsed once), condition_trees (a condition's tree kept per text and names, its values bound per
call), attribute_values (DynamoDB's items serialized as the copies they are),
stack_template (a JSON stack template read as JSON), events_hot_paths (an event flattened once
for all of a bus's rules, a target's input read without JSONPath where a path names a top-level field),
attribute_parse (a DynamoDB request's attribute values read as the copies they are),
account_backends (an account's backend found without walking every backend dict), item_sizes (an
item's 400 KB check in one pass over its attributes), dynamo_results (a DynamoDB result's plain
values taken as they are), xml_request_ids (a response body without an XML request id left
unscanned), event_aliases (botocore's event names aliased once per process, not once per client),
deferred_keys (KMS keys' and Cognito user pools' private keys made when first read, not at creation)
and route_builders (werkzeug's URL builders compiled on first use, which moto's routing never makes).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from intentbus_local import (
    account_backends,
    attribute_parse,
    attribute_values,
    condition_trees,
    deferred_keys,
    dynamo_results,
    dynamodb_hot_paths,
    event_aliases,
    events_hot_paths,
    item_sizes,
    response_keys,
    route_builders,
    sqs_hot_paths,
    stack_template,
    xml_request_ids,
)


def apply() -> None:
    """Idempotent: a function already memoized is left as it is."""
    import jsonpath_ng.ext
    import moto.core.responses
    import moto.core.utils
    import moto.sqs.models

    _memoize(jsonpath_ng.ext, "parse", 64, (jsonpath_ng.ext,))
    _memoize(
        moto.core.utils,
        "camelcase_to_underscores",
        4096,
        (moto.core.utils, moto.core.responses, moto.sqs.models),
    )
    _memoize(moto.core.utils, "method_names_from_class", 512, (moto.core.utils, moto.core.responses))
    _memoize(moto.core.utils, "utcfromtimestamp", 256, (moto.core.utils,))
    sqs_hot_paths.apply()
    response_keys.apply()
    dynamodb_hot_paths.apply()
    condition_trees.apply()
    attribute_values.apply()
    stack_template.apply()
    events_hot_paths.apply()
    attribute_parse.apply()
    account_backends.apply()
    item_sizes.apply()
    dynamo_results.apply()
    xml_request_ids.apply()
    event_aliases.apply()
    deferred_keys.apply()
    route_builders.apply()


def _memoize(home: object, name: str, size: int, importers: tuple[object, ...]) -> None:
    function: Callable[..., Any] = getattr(home, name)
    if not hasattr(function, "cache_info"):
        function = functools.lru_cache(maxsize=size)(function)
    for module in importers:  # each module that imported the name holds its own reference
        setattr(module, name, function)
