"""Runs what ``sam build`` produced, as Lambda would: each function in a process of its own.

A function's warm "container" is one Python process (lambda_worker.py, copied out of the source tree),
started on its first invocation and kept between invocations. Its ``sys.path`` is exactly Lambda's for
python3.11: the function's built directory (``/var/task``), each layer's ``python/lib/python3.11/
site-packages`` and ``python/`` (``/opt/python``), then the runtime's own boto3 (runtime_sdk.py) and the
standard library; nothing from the source tree or this environment's site-packages. Each invocation
carries its environment (the local clock's offset included), the context's attributes and deadline; the
answer is the response or the error, over pipes of their own; the handler's stdout and stderr go to the
function's log file.

The handler's AWS calls reach moto over HTTP, so this needs the local cloud's server mode. What cannot
cross into another process is refused: tracing capture (the X-Ray SDK runs in the container) and fault
injection (it patches this process's botocore; the fault harness runs in-process anyway).

A handler past its Timeout is stopped (the container is killed and the next invocation starts a new
one), as Lambda does; so is a container that dies, whose invocation fails with its exit status.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from intentbus_build.built_template import BuildError, Function, Layer, read_build
from intentbus_build.elf import compiled_files
from intentbus_build.lambda_python import ARCHITECTURES, host_architecture, layer_paths
from intentbus_local import tracing
from intentbus_local.clock import LocalClock
from intentbus_local.lambda_runtime import FunctionTimeoutError, Invocation, lambda_environment
from intentbus_local.runtime_sdk import link_runtime_sdk
from intentbus_local.topology import FunctionInfo

_WORKER_SOURCE = Path(__file__).with_name("lambda_worker.py")
_READ_CHUNK = 1 << 16
_STOP_SECONDS = 5.0


class BuiltModeError(RuntimeError):
    """Something the built mode cannot do (it would need this process and the function's to be one)."""


class FunctionError(RuntimeError):
    """The handler (or the runtime in its container) failed; Lambda's error type, message and stack."""

    def __init__(self, error_type: str, message: str, stack_trace: list[str]) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.stack_trace = stack_trace


class ContainerExited(RuntimeError):
    """The container's process ended during an invocation (no response, as when a sandbox dies)."""


@dataclass(frozen=True)
class BuiltCode:
    directory: Path
    template: Path
    layers: Mapping[str, tuple[Path, ...]]
    """Function logical id -> its layers' directories, in order."""


def open_build(directory: Path) -> BuiltCode:
    """The build's template and layers, once it is clear this machine can run its compiled code.

    Paths are made absolute: a container's working directory is its function's."""
    directory = directory.resolve()
    build = read_build(directory)
    host = host_architecture()
    artifacts: list[Function | Layer] = [*build.functions.values(), *build.layers.values()]
    for artifact in artifacts:
        if not artifact.path.is_dir():
            raise BuildError(f"{artifact.logical_id} is not built ({artifact.path}): run 'make build'")
        for path, machine in compiled_files(artifact.path):
            if machine != ARCHITECTURES.get(host or ""):
                built_for = next((a for a, m in ARCHITECTURES.items() if m == machine), hex(machine))
                raise BuildError(
                    f"{path} is compiled for {built_for} and this machine is {host or 'neither'}: "
                    f"build with 'make build ARCHITECTURE={host}'"
                )
    for function in build.functions.values():
        if function.external_layers:
            raise BuildError(
                f"{function.logical_id} uses layers the build does not hold: {list(function.external_layers)}"
            )
    return BuiltCode(
        directory=directory,
        template=directory / "template.yaml",
        layers={
            f.logical_id: tuple(build.layers[ref].path for ref in f.layers) for f in build.functions.values()
        },
    )


@dataclass(frozen=True)
class WorkerState:
    sys_path: list[str]
    modules: dict[str, str]
    """Every loaded module's name -> its file."""


class _Container:
    def __init__(
        self, function: FunctionInfo, paths: list[Path], bootstrap: Path, log: IO[str], env: Mapping[str, str]
    ) -> None:
        request_read, self._requests = os.pipe()
        self._responses, response_write = os.pipe()
        self._buffer = b""
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-I",  # no PYTHON* variables, no script directory, no user site-packages
                    "-S",  # no site-packages: sys.path is the standard library until the worker adds `paths`
                    "-u",
                    "-X",
                    "utf8",
                    str(bootstrap),
                    str(request_read),
                    str(response_write),
                    function.handler,
                    json.dumps([str(p) for p in paths]),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=dict(env),
                cwd=function.code_dir,
                pass_fds=(request_read, response_write),
            )
        except BaseException:
            for fd in (self._requests, self._responses):
                os.close(fd)
            raise
        finally:
            os.close(request_read)
            os.close(response_write)

    def ask(self, request: Mapping[str, Any], *, timeout: float) -> dict[str, Any] | None:
        """The answer; None if none came within ``timeout`` seconds. ContainerExited if the process died."""
        try:
            os.write(self._requests, (json.dumps(request) + "\n").encode())
        except BrokenPipeError:
            raise self._exited() from None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            readable, _, _ = select.select([self._responses], [], [], remaining)
            if not readable:
                continue
            chunk = os.read(self._responses, _READ_CHUNK)
            if not chunk:
                raise self._exited()
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _exited(self) -> ContainerExited:
        code = self.process.wait(timeout=_STOP_SECONDS)
        return ContainerExited(f"the function's process exited with status {code} during the invocation")

    def stop(self, *, kill: bool = False) -> None:
        for fd in (self._requests, self._responses):
            with contextlib.suppress(OSError):
                os.close(fd)
        if kill:
            self.process.kill()
        try:
            self.process.wait(timeout=_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _invoke_request(
    function: FunctionInfo, request_id: str, event: Mapping[str, Any], environment: Mapping[str, str]
) -> dict[str, Any]:
    return {
        "invoke": {
            "event": event,
            "environment": environment,
            "deadline_ms": (time.time() + function.timeout) * 1000,
            "context": {
                "function_name": function.name,
                "function_version": "$LATEST",
                "invoked_function_arn": function.arn,
                "memory_limit_in_mb": function.memory_size,
                "aws_request_id": request_id,
                "log_group_name": f"/aws/lambda/{function.name}",
                "log_stream_name": f"local/[$LATEST]{function.logical_id}",
            },
        }
    }


class BuiltRuntime:
    """The FunctionRuntime of built code (see the module's docstring); one invocation at a time."""

    def __init__(
        self,
        functions: Mapping[str, FunctionInfo],
        code: BuiltCode,
        *,
        clock: LocalClock,
        logs_dir: Path,
        base_environment: Mapping[str, str],
    ) -> None:
        self._functions = functions
        self._code = code
        self._clock = clock
        self._logs_dir = logs_dir
        self._base_environment = dict(base_environment)
        self._runtime_dir = Path(tempfile.mkdtemp(prefix="intentbus-lambda-runtime-"))
        self._bootstrap = self._runtime_dir / "bootstrap.py"
        shutil.copyfile(_WORKER_SOURCE, self._bootstrap)
        self._sdk_dir = link_runtime_sdk(self._runtime_dir / "sdk")
        self._containers: dict[str, _Container] = {}
        self._logs: dict[str, IO[str]] = {}
        self._lock = threading.Lock()

    @property
    def sdk_dir(self) -> Path:
        return self._sdk_dir

    def log_path(self, logical_id: str) -> Path:
        return self._logs_dir / f"{logical_id}.log"

    def sys_path(self, logical_id: str) -> list[Path]:
        """The function's import path before the standard library, as Lambda orders it."""
        layers = [p for layer in self._code.layers.get(logical_id, ()) for p in layer_paths(layer)]
        return [self._functions[logical_id].code_dir, *layers, self._sdk_dir]

    def invoke(self, logical_id: str, event: Mapping[str, Any]) -> Invocation:
        if tracing.active() is not None:
            raise BuiltModeError(
                "tracing capture needs the in-process runtime: a built function's X-Ray SDK runs in its "
                "own process"
            )
        function = self._functions[logical_id]
        request_id = str(uuid.uuid4())
        with self._lock:
            log = self._log(logical_id)
            environment = lambda_environment(
                function, self._base_environment, clock_offset=self._clock.offset_seconds
            )
            started_at = self._clock.now()
            started = time.monotonic()
            print(f"START RequestId: {request_id} Version: $LATEST", file=log, flush=True)
            request = _invoke_request(function, request_id, event, environment)
            response, error = self._run(function, request, environment)
            duration = time.monotonic() - started
            if isinstance(error, FunctionTimeoutError):
                print(f"{request_id} {error}", file=log)
            elif isinstance(error, ContainerExited):
                print(f"RequestId: {request_id} Error: {error}", file=log)
            print(f"END RequestId: {request_id}", file=log)
            print(f"REPORT RequestId: {request_id}\tDuration: {duration * 1000:.2f} ms", file=log, flush=True)
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

    def describe(self, logical_id: str) -> WorkerState:
        """Where the function's warm container imported everything from (it must have been invoked)."""
        with self._lock:
            container = self._containers.get(logical_id)
            if container is None:
                raise BuiltModeError(f"{logical_id} has no warm container: invoke it first")
            answer = container.ask({"describe": {}}, timeout=_STOP_SECONDS)
        if answer is None:
            raise BuiltModeError(f"{logical_id}'s container did not answer")
        return WorkerState(sys_path=answer["sys_path"], modules=answer["modules"])

    def redeployed(self, functions: Mapping[str, FunctionInfo]) -> None:
        """The functions as a redeploy left them: every warm container is stopped, so the next invocation
        starts a new one under the function's new configuration (the build's code stays the same)."""
        with self._lock:
            self._functions = functions
            for container in self._containers.values():
                container.stop()
            self._containers.clear()

    def close(self) -> None:
        with self._lock:
            for container in self._containers.values():
                container.stop()
            self._containers.clear()
            for log in self._logs.values():
                log.close()
            self._logs.clear()
            shutil.rmtree(self._runtime_dir, ignore_errors=True)

    def _run(
        self, function: FunctionInfo, request: Mapping[str, Any], environment: Mapping[str, str]
    ) -> tuple[Any, BaseException | None]:
        container = self._container(function, environment)
        try:
            answer = container.ask(request, timeout=function.timeout)
        except ContainerExited as exited:
            del self._containers[function.logical_id]
            return None, exited
        if answer is None:
            container.stop(kill=True)
            del self._containers[function.logical_id]
            return None, FunctionTimeoutError(f"Task timed out after {function.timeout:.2f} seconds")
        if "error" in answer:
            failure = answer["error"]
            return None, FunctionError(failure["errorType"], failure["errorMessage"], failure["stackTrace"])
        return answer["response"], None

    def _container(self, function: FunctionInfo, environment: Mapping[str, str]) -> _Container:
        container = self._containers.get(function.logical_id)
        if container is None:
            container = _Container(
                function,
                self.sys_path(function.logical_id),
                self._bootstrap,
                self._log(function.logical_id),
                environment,
            )
            self._containers[function.logical_id] = container
        return container

    def _log(self, logical_id: str) -> IO[str]:
        log = self._logs.get(logical_id)
        if log is None:
            self._logs_dir.mkdir(parents=True, exist_ok=True)
            log = self._logs[logical_id] = self.log_path(logical_id).open("a", encoding="utf-8", buffering=1)
        return log
