"""botocore's endpoint ruleset parameters, resolved from a plan made once per operation.

Before every request botocore resolves each parameter of the service's endpoint ruleset (region, FIPS,
dual stack, the account id, the table a DynamoDB call names, ...) by asking, per parameter, four cached
lookups (static, dynamic, operation and client context) and then the builtins: 8 to 15% of a DynamoDB or
PutEvents call's CPU. ``install(client)`` gives the client's resolver a ``_get_provider_params`` that walks
a plan of those lookups made once per operation instead. Every value is still read on every call, in
botocore's order (static, dynamic, operation context, client context, builtin), callable builtins are
called, the ``before-endpoint-resolution`` event is still emitted and the endpoint feature ids still
registered, so the parameters (and the endpoint botocore's own cache resolves from them) are the same.

A resolver that lacks any of the botocore internals read here is left as botocore made it.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import Any

import jmespath  # type: ignore[import-untyped]  # botocore's own dependency

from intentbus.frozen import FrozenPlain

_NEEDED = (
    "_param_definitions",
    "_get_customized_builtins",
    "_get_static_context_params",
    "_get_dynamic_context_params",
    "_get_client_context_params",
    "_client_context",
    "_register_endpoint_feature_ids",
)


class _Source(FrozenPlain):
    """Where one ruleset parameter's value may come from, in botocore's order of precedence. A slotted
    class, not a ``NamedTuple`` (whose generated ``__new__`` cost a cold start 1 M instructions)."""

    __slots__ = ("builtin", "client_name", "member", "name", "path", "static")

    name: str
    static: Any
    member: str | None
    path: Callable[[dict[str, Any]], Any] | None
    """The operation context parameter's JMESPath expression, compiled (``jmespath.search`` parses it on
    every call), or a direct reading of it (``_READINGS``)."""
    client_name: str | None
    builtin: str | None

    def __init__(  # noqa: PLR0917 - the sources' fields, in order
        self,
        name: str,
        static: Any,
        member: str | None,
        path: Callable[[dict[str, Any]], Any] | None,
        client_name: str | None,
        builtin: str | None,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "static", static)
        object.__setattr__(self, "member", member)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "client_name", client_name)
        object.__setattr__(self, "builtin", builtin)


def install(client: Any) -> Any:
    """``client``, its endpoint parameters resolved by plan (see the module); returned for chaining."""
    resolver = getattr(client, "_ruleset_resolver", None)
    if resolver is None or not all(hasattr(resolver, name) for name in _NEEDED):
        return client
    if "_get_provider_params" not in vars(resolver):
        resolver._get_provider_params = MethodType(_planned(resolver._get_provider_params), resolver)
    return client


def _planned(original: Callable[[Any, Any, Any], dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    plans: dict[str, tuple[_Source, ...] | None] = {}

    def provider_params(
        resolver: Any, operation_model: Any, call_args: dict[str, Any], request_context: dict[str, Any]
    ) -> dict[str, Any]:
        name = operation_model.name
        if name not in plans:
            plans[name] = _plan(resolver, operation_model)
        plan = plans[name]
        if plan is None:
            return original(operation_model, call_args, request_context)
        builtins = resolver._get_customized_builtins(operation_model, call_args, request_context)
        client_context = resolver._client_context
        params: dict[str, Any] = {}
        for source in plan:
            value = source.static
            if value is None and source.member is not None:
                value = call_args.get(source.member)
            if value is None and source.path is not None:
                value = source.path(call_args)
            if value is None and source.client_name is not None:
                value = client_context.get(source.client_name)
            if value is None and source.builtin is not None:
                value = builtins.get(source.builtin)
                if callable(value):
                    value = value()
            if value is not None:
                params[source.name] = value
                resolver._register_endpoint_feature_ids(source.name, value)
        return params

    return provider_params


def _reading(expression: str) -> Callable[[dict[str, Any]], Any]:
    """What ``jmespath.search(expression, call_args)`` gives, for any ``call_args``."""
    compiled = jmespath.compile(expression)
    direct = _READINGS.get(expression)
    if direct is None:
        return compiled.search  # type: ignore[no-any-return]

    def read(call_args: dict[str, Any]) -> Any:
        value = direct(call_args)
        return compiled.search(call_args) if value is _UNSURE else value

    return read


_UNSURE = object()
"""A direct reading's answer when the arguments are not of the plain shapes it reads: JMESPath decides."""


def _request_tables(call_args: dict[str, Any]) -> Any:
    """``keys(RequestItems)`` (BatchGetItem, BatchWriteItem) of a plain dict."""
    items = call_args.get("RequestItems")
    return list(items.keys()) if type(items) is dict else _UNSURE


_WRITE_ACTIONS = ("ConditionCheck", "Put", "Delete", "Update")


def _transaction_tables(call_args: dict[str, Any]) -> Any:
    """``TransactItems[*].[ConditionCheck.TableName, Put.TableName, Delete.TableName, Update.TableName][]``
    (TransactWriteItems) of a plain list of plain dicts: every table name in order, nulls dropped."""
    items = call_args.get("TransactItems")
    if type(items) is not list:
        return _UNSURE
    tables = []
    for item in items:
        if type(item) is not dict:
            return _UNSURE
        for action in _WRITE_ACTIONS:
            request = item.get(action)
            if request is None:
                continue
            if type(request) is not dict:
                return _UNSURE
            table = request.get("TableName")
            if table is None:
                continue
            if type(table) is not str:
                return _UNSURE
            tables.append(table)
    return tables


_READINGS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "keys(RequestItems)": _request_tables,
    "TransactItems[*].[ConditionCheck.TableName, Put.TableName, Delete.TableName, Update.TableName][]": (
        _transaction_tables
    ),
}
"""DynamoDB's operation context expressions on every batch read and transaction the runtime makes, read
directly (JMESPath's interpreter was half of the remaining resolution); botocore names them in its model,
so a model that changes one simply falls back to JMESPath."""


def _plan(resolver: Any, operation_model: Any) -> tuple[_Source, ...] | None:
    """The operation's parameter sources; ``None`` (botocore's own resolution) for a builtin it does not
    know, which botocore reports as an error on every call."""
    from botocore.regions import EndpointResolverBuiltins

    known = tuple(EndpointResolverBuiltins.__members__.values())  # compared as botocore does: by value
    static = resolver._get_static_context_params(operation_model)
    dynamic = resolver._get_dynamic_context_params(operation_model)
    operation_context = operation_model.operation_context_parameters
    client_names = resolver._get_client_context_params()
    sources = []
    for name, definition in resolver._param_definitions.items():
        if definition.builtin is not None and definition.builtin not in known:
            return None
        path = _reading(operation_context[name]["path"]) if name in operation_context else None
        sources.append(
            _Source(
                name=name,
                static=static.get(name),
                member=dynamic.get(name),
                path=path,
                client_name=client_names.get(name),
                builtin=definition.builtin,
            )
        )
    return tuple(sources)
