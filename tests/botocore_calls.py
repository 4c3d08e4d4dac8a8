"""Every botocore call made inside a Lambda invocation on the local cloud, by function.

The local cloud's runtime sets ``AWS_LAMBDA_FUNCTION_NAME`` while a handler runs, so calls are
told apart from the test's own. Every boto3 client, whichever session made it, sends through
``BaseClient._make_api_call``; wrapping it also lets a test inject a failure on chosen calls.
"""

from __future__ import annotations

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


@dataclass
class CallLog:
    calls: list[Call] = field(default_factory=list)

    def by_function(self, function: str) -> list[Call]:
        return [call for call in self.calls if call.function == function]

    def count(self, service: str, operation: str) -> int:
        return sum(1 for call in self.calls if (call.service, call.operation) == (service, operation))


@contextmanager
def recording(log: CallLog, faults: tuple[Fault, ...] = ()) -> Iterator[CallLog]:
    original = vars(BaseClient)[_HOOKED]

    def recorded(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        if function:
            call = Call(function, client.meta.service_model.service_name, operation, params)
            log.calls.append(call)
            for fault in faults:
                error = fault(call)
                if error is not None:
                    raise error
        return original(client, operation, params)

    setattr(BaseClient, _HOOKED, recorded)
    try:
        yield log
    finally:
        setattr(BaseClient, _HOOKED, original)
