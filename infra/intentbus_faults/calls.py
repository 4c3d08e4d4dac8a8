"""Every botocore call made inside a Lambda invocation on the local cloud, by function.

The local cloud's runtime sets ``AWS_LAMBDA_FUNCTION_NAME`` while a handler runs, so calls are
told apart from the test's own. Every boto3 client, whichever session made it, sends through
``BaseClient._make_api_call``; wrapping it also lets a test inject a failure on chosen calls
(``faults``: raise instead of calling) or wrap them (``interceptors``: call with other parameters,
raise after the call took effect, answer something else; see intentbus_local.faults).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.client import BaseClient

_HOOKED = "_make_api_call"


@dataclass(frozen=True)
class Call:
    function: str
    service: str
    operation: str
    params: dict[str, Any]


Fault = Callable[[Call], Exception | None]
"""Returns the exception to raise instead of making the call, or None to let it through."""

Proceed = Callable[[dict[str, Any]], Any]
"""Makes the call (through the interceptors further in) with these parameters; returns the response."""

Interceptor = Callable[[Call, Proceed], Any]
"""Wraps a call: returns the response the caller sees, or raises. The first one is the outermost."""


@dataclass
class CallLog:
    calls: list[Call] = field(default_factory=list)

    def by_function(self, function: str) -> list[Call]:
        return [call for call in self.calls if call.function == function]

    def count(self, service: str, operation: str) -> int:
        return sum(1 for call in self.calls if (call.service, call.operation) == (service, operation))


@contextmanager
def recording(
    log: CallLog, faults: tuple[Fault, ...] = (), interceptors: tuple[Interceptor, ...] = ()
) -> Iterator[CallLog]:
    original = vars(BaseClient)[_HOOKED]

    def recorded(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
        # Bound, not called as a plain function: the X-Ray SDK's patch (a wrapt wrapper) reads the
        # client from the binding, and gets None when called unbound.
        call_original = original.__get__(client, type(client))
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        if not function:
            return call_original(operation, params)
        call = Call(function, client.meta.service_model.service_name, operation, params)
        log.calls.append(call)
        for fault in faults:
            error = fault(call)
            if error is not None:
                raise error
        return _chain(call, interceptors, lambda p: call_original(operation, p))(params)

    setattr(BaseClient, _HOOKED, recorded)
    try:
        yield log
    finally:
        setattr(BaseClient, _HOOKED, original)


def _chain(call: Call, interceptors: tuple[Interceptor, ...], innermost: Proceed) -> Proceed:
    proceed = innermost
    for interceptor in reversed(interceptors):
        proceed = functools.partial(_intercepted, interceptor, call, proceed)
    return proceed


def _intercepted(interceptor: Interceptor, call: Call, proceed: Proceed, params: dict[str, Any]) -> Any:
    # The same Call when the parameters are the ones it holds (most calls): ``replace`` is ~10 µs.
    seen = call if params is call.params else Call(call.function, call.service, call.operation, params)
    return interceptor(seen, proceed)
