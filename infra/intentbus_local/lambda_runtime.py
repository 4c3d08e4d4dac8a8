"""Runs a function's handler in this process the way Lambda would: its env, a context, its own log.

Each function keeps a warm "container": its handler module is imported once, under a unique module
name, so the five ``app.py`` files do not collide. Import and invocation both run with the function's
environment overlaid on ``os.environ`` and with stdout/stderr going to the function's log file (like
CloudWatch Logs, see log_routing): Powertools' Logger binds its stream when it is created, at import.
Because the overlay is process-global, invocations run one at a time.

Fidelity limits: library modules (``intentbus.*``) are shared by all functions of the process, unlike
separate Lambda sandboxes; a handler running past its Timeout is not stopped, but its invocation is
reported as timed out (the batch fails, as on AWS) once it returns. Past its Timeout means on the wall
clock or on the local clock: virtual time skipped while it ran counts (see faults.overrun).

A handler that raises ``InvocationCrash`` plays its sandbox dying at that point: no response, so the
whole batch fails and SQS redelivers it. As on Lambda, a sandbox that crashed or timed out is not used
again: the next invocation of that function is a cold start (its handler module imported anew, so its
clients, caches and the stage built at the first call are gone). A handler that only raises keeps its
warm container, as Lambda keeps the sandbox.

Tracing is off (``POWERTOOLS_TRACE_DISABLED=true``) unless a ``tracing.capture()`` is open: then each
invocation gets Lambda's trace context from its first record's ``AWSTraceHeader`` and the X-Ray SDK
sends its segments to the capture (see intentbus_local.tracing).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any, Protocol

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus_local import environ_snapshot, tracing
from intentbus_local.clock import LocalClock
from intentbus_local.log_routing import routed_to
from intentbus_local.topology import FunctionInfo

Handler = Callable[[Any, Any], Any]

# Cleared for the invocation so the handler's boto3 sees only the local cloud's credentials.
_UNSET_DURING_INVOCATION = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")


class FunctionTimeoutError(RuntimeError):
    pass


class InvocationCrash(BaseException):
    """Raised inside a handler to play its process dying right there (see intentbus_local.faults).

    A BaseException, so neither Powertools' BatchProcessor nor any ``except Exception`` in the handler
    catches it: whatever the handler already did stays done, and it returns no response.
    """


class FakeLambdaContext:
    """The attributes of the Python runtime's LambdaContext; remaining time follows the local clock."""

    def __init__(self, function: FunctionInfo, clock: LocalClock, request_id: str) -> None:
        self.function_name = function.name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function.arn
        self.memory_limit_in_mb = function.memory_size
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{function.name}"
        self.log_stream_name = f"local/[$LATEST]{function.logical_id}"
        self.identity: Any = None
        self.client_context: Any = None
        self._clock = clock
        self._deadline = clock.now() + function.timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - self._clock.now()) * 1000))


@dataclass(frozen=True)
class Invocation:
    function_logical_id: str
    function_name: str
    request_id: str
    event: Mapping[str, Any]
    response: Any
    error: BaseException | None
    started_at: float
    """Virtual time (epoch seconds) the invocation started."""
    duration_seconds: float
    """Wall-clock duration."""

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def crashed(self) -> bool:
        return isinstance(self.error, InvocationCrash)


class FunctionRuntime(Protocol):
    """Runs the functions of a topology: this module's in-process runtime, or built_runtime's containers."""

    def invoke(self, logical_id: str, event: Mapping[str, Any]) -> Invocation: ...

    def log_path(self, logical_id: str) -> Path: ...

    def redeployed(self, functions: Mapping[str, FunctionInfo]) -> None: ...

    def close(self) -> None: ...


def lambda_environment(
    function: FunctionInfo,
    base: Mapping[str, str],
    *,
    clock_offset: float,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A function's environment as Lambda sets it, with the local clock's offset for the handler."""
    return {
        **base,
        "AWS_LAMBDA_FUNCTION_NAME": function.name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": f"local/[$LATEST]{function.logical_id}",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
        "LAMBDA_TASK_ROOT": str(function.code_dir),
        "POWERTOOLS_TRACE_DISABLED": "true",
        **function.environment,
        **(extra or {}),
        CLOCK_OFFSET_ENV: str(clock_offset),
    }


class LambdaRuntime:
    def __init__(
        self,
        functions: Mapping[str, FunctionInfo],
        *,
        clock: LocalClock,
        logs_dir: Path,
        base_environment: Mapping[str, str],
    ) -> None:
        self._functions = functions
        self._clock = clock
        self._logs_dir = logs_dir
        self._base_environment = dict(base_environment)
        self._handlers: dict[str, Handler] = {}
        self._logs: dict[str, IO[str]] = {}
        self._lock = threading.Lock()

    def log_path(self, logical_id: str) -> Path:
        return self._logs_dir / f"{logical_id}.log"

    def invoke(self, logical_id: str, event: Mapping[str, Any]) -> Invocation:
        function = self._functions[logical_id]
        request_id = str(uuid.uuid4())
        captured = tracing.active()
        trace = tracing.InvocationTrace.for_event(event) if captured is not None else None
        with (
            self._lock,
            self._overlay(function, trace),
            self._redirected(logical_id) as log,
            self._traced(function, request_id, captured, trace) as finish_trace,
        ):
            started_at = self._clock.now()
            started = time.monotonic()
            response: Any = None
            error: BaseException | None = None
            print(f"START RequestId: {request_id} Version: $LATEST", file=log)
            try:
                handler = self._handler(function)
                response = handler(event, FakeLambdaContext(function, self._clock, request_id))
            except (Exception, InvocationCrash) as exc:
                error = exc
                print(f"[ERROR] {type(exc).__name__}: {exc}", file=log)
                traceback.print_exc(file=log)
            duration = time.monotonic() - started
            ran_for = max(duration, self._clock.now() - started_at)
            if error is None and ran_for > function.timeout:
                error = FunctionTimeoutError(f"Task timed out after {ran_for:.2f} seconds")
                print(f"{request_id} {error}", file=log)
            if isinstance(error, InvocationCrash | FunctionTimeoutError):
                self._retire(logical_id)
            finish_trace(error)
            print(f"END RequestId: {request_id}", file=log)
            report = f"REPORT RequestId: {request_id}\tDuration: {duration * 1000:.2f} ms"
            if trace is not None:  # as Lambda writes it for a traced invocation
                report += f"\tXRAY TraceId: {trace.root}\tSegmentId: {trace.segment_id}\tSampled: "
                report += "true" if trace.sampled else "false"
            print(report, file=log)
        return Invocation(
            function_logical_id=logical_id,
            function_name=function.name,
            request_id=request_id,
            event=event,
            response=response,
            error=error,
            started_at=started_at,
            duration_seconds=duration,
        )

    def redeployed(self, functions: Mapping[str, FunctionInfo]) -> None:
        """The functions as a redeploy left them: every warm container is dropped, as Lambda starts new
        sandboxes for a function whose configuration or code changed, so the next invocation imports its
        handler again under its new environment. Modules the handler imports (``intentbus.*``, workflow
        modules) stay imported in this process: a changed workflow module is seen under a new name."""
        self._functions = functions
        for logical_id in self._handlers:
            sys.modules.pop(handler_module_name(logical_id), None)
        self._handlers.clear()

    def _retire(self, logical_id: str) -> None:
        """The function's sandbox is gone: its next invocation imports the handler module again."""
        if self._handlers.pop(logical_id, None) is not None:
            sys.modules.pop(handler_module_name(logical_id), None)

    def close(self) -> None:
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        for logical_id in self._handlers:
            sys.modules.pop(handler_module_name(logical_id), None)
        self._handlers.clear()

    def _handler(self, function: FunctionInfo) -> Handler:
        """Imports on first use (a cold start); a failed import is retried on the next invocation."""
        if function.logical_id not in self._handlers:
            module_path, _, attribute = function.handler.rpartition(".")
            tracing.fresh_sandbox()
            module = _import_from(
                function.code_dir / (module_path.replace(".", "/") + ".py"), function.logical_id
            )
            handler = getattr(module, attribute)
            if not callable(handler):
                raise TypeError(f"{function.logical_id}: {function.handler} is not callable")
            self._handlers[function.logical_id] = handler
        return self._handlers[function.logical_id]

    def _environment(self, function: FunctionInfo, trace: tracing.InvocationTrace | None) -> dict[str, str]:
        return lambda_environment(
            function,
            self._base_environment,
            clock_offset=self._clock.offset_seconds,
            extra=tracing.environment(trace) if trace is not None else {},
        )

    @contextlib.contextmanager
    def _overlay(self, function: FunctionInfo, trace: tracing.InvocationTrace | None) -> Iterator[None]:
        saved = environ_snapshot.Snapshot()
        try:
            for name in _UNSET_DURING_INVOCATION:
                os.environ.pop(name, None)
            os.environ.update(self._environment(function, trace))
            yield
        finally:
            saved.restore()

    @contextlib.contextmanager
    def _traced(
        self,
        function: FunctionInfo,
        request_id: str,
        captured: tracing.Capture | None,
        trace: tracing.InvocationTrace | None,
    ) -> Iterator[Callable[[BaseException | None], None]]:
        if captured is None or trace is None:
            yield lambda error: None
            return
        with tracing.traced_invocation(
            captured, trace, function_name=function.name, function_arn=function.arn, request_id=request_id
        ) as finish:
            yield finish

    @contextlib.contextmanager
    def _redirected(self, logical_id: str) -> Iterator[IO[str]]:
        log = self._logs.get(logical_id)
        if log is None:
            self._logs_dir.mkdir(parents=True, exist_ok=True)
            log = self._logs[logical_id] = self.log_path(logical_id).open("a", encoding="utf-8", buffering=1)
        with routed_to(log):
            yield log


def handler_module_name(logical_id: str) -> str:
    """The name a function's handler module is imported under (one per function, so the ``app.py`` files
    do not collide); present in ``sys.modules`` while the function has a warm container."""
    return f"intentbus_fn_{logical_id}"


def _import_from(path: Path, logical_id: str) -> ModuleType:
    name = handler_module_name(logical_id)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{logical_id}: cannot load a handler module from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pydantic look classes' modules up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
