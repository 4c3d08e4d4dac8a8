"""The bootstrap of a built function's "container": what Lambda's runtime client does in /var/runtime.

Standard library only: it runs as ``python -I -S bootstrap.py REQUEST_FD RESPONSE_FD HANDLER PATHS`` in
a process whose ``sys.path`` is the interpreter's standard library plus PATHS (the function's directory, its
layers' ``python/`` directories, the stand-in for the runtime's boto3) and nothing else. The local cloud
copies this file out of the source tree before starting it (see built_runtime).

Requests arrive one JSON object a line on REQUEST_FD; each answer is one JSON object a line on
RESPONSE_FD: pipes of their own, so whatever the handler does with stdin, stdout or stderr cannot touch
them. stdout and stderr are the function's log, as CloudWatch Logs would have them.

* ``{"invoke": {"event", "context", "deadline_ms", "environment"}}`` runs the handler with exactly that
  environment and answers ``{"response": ...}`` or ``{"error": {"errorType", "errorMessage",
  "stackTrace"}}`` (Lambda's shape). The handler's module is imported by the first invocation (a cold
  start) and kept; a failed import is tried again by the next one.
* ``{"describe": {}}`` answers ``{"sys_path": [...], "modules": {name: file}}``: where every loaded
  module came from, for tests that check nothing outside the build was imported.
"""

import importlib
import json
import os
import sys
import time
import traceback
from typing import Any

Handler = Any


class LambdaContext:
    """The attributes of the Python runtime's context object; the deadline is wall-clock epoch ms."""

    def __init__(self, attributes: dict[str, Any], deadline_ms: float) -> None:
        self.function_name: str = attributes["function_name"]
        self.function_version: str = attributes["function_version"]
        self.invoked_function_arn: str = attributes["invoked_function_arn"]
        self.memory_limit_in_mb: int = attributes["memory_limit_in_mb"]
        self.aws_request_id: str = attributes["aws_request_id"]
        self.log_group_name: str = attributes["log_group_name"]
        self.log_stream_name: str = attributes["log_stream_name"]
        self.identity: Any = None
        self.client_context: Any = None
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self._deadline_ms - time.time() * 1000))


class Worker:
    def __init__(self, handler_spec: str) -> None:
        self._module_name, _, self._attribute = handler_spec.rpartition(".")
        self._handler: Handler | None = None

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        if "invoke" in request:
            return self._invoke(request["invoke"])
        if "describe" in request:
            return _describe()
        return _error("Runtime.UnknownRequest", f"unknown request {sorted(request)}", [])

    def _invoke(self, invocation: dict[str, Any]) -> dict[str, Any]:
        os.environ.clear()
        os.environ.update(invocation["environment"])
        try:
            handler = self._loaded()
        except Exception as exc:
            return _failed(
                "Runtime.ImportModuleError", f"Unable to import module '{self._module_name}': {exc}", exc
            )
        context = LambdaContext(invocation["context"], invocation["deadline_ms"])
        try:
            result = handler(invocation["event"], context)
        except Exception as exc:
            return _failed(type(exc).__name__, str(exc), exc)
        try:
            return {"response": json.loads(json.dumps(result))}
        except (TypeError, ValueError) as exc:
            return _failed("Runtime.MarshalError", f"Unable to marshal response: {exc}", exc)

    def _loaded(self) -> Handler:
        if self._handler is None:
            module = importlib.import_module(self._module_name)
            handler = getattr(module, self._attribute)
            if not callable(handler):
                raise TypeError(f"{self._module_name}.{self._attribute} is not callable")
            self._handler = handler
        return self._handler


def _failed(error_type: str, message: str, exc: BaseException) -> dict[str, Any]:
    stack = traceback.format_exception(exc)
    print(f"[ERROR] {error_type}: {message}", file=sys.stderr)
    print("".join(stack), end="", file=sys.stderr)
    return _error(error_type, message, stack)


def _error(error_type: str, message: str, stack: list[str]) -> dict[str, Any]:
    return {"error": {"errorType": error_type, "errorMessage": message, "stackTrace": stack}}


def _describe() -> dict[str, Any]:
    modules = {
        name: file
        for name, module in sorted(sys.modules.items())
        if isinstance(file := getattr(module, "__file__", None), str)
    }
    return {"sys_path": list(sys.path), "modules": modules}


def main(argv: list[str]) -> int:
    request_fd, response_fd, handler_spec = int(argv[1]), int(argv[2]), argv[3]
    sys.path[:0] = json.loads(argv[4])
    worker = Worker(handler_spec)
    with (
        open(request_fd, encoding="utf-8") as requests,
        open(response_fd, "w", encoding="utf-8") as responses,
    ):
        for line in requests:
            answer = worker.handle(json.loads(line))
            sys.stdout.flush()
            sys.stderr.flush()
            responses.write(json.dumps(answer) + "\n")
            responses.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
