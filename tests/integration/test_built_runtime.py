"""The built runtime's containers on a synthetic build: one process per function, kept warm, with
Lambda's import path, each invocation's environment and context, errors, deaths and timeouts."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus_build.built_template import BuildError
from intentbus_local import tracing
from intentbus_local.built_runtime import (
    BuiltCode,
    BuiltModeError,
    BuiltRuntime,
    ContainerExited,
    FunctionError,
    open_build,
)
from intentbus_local.clock import LocalClock
from intentbus_local.cloud import LocalCloud
from intentbus_local.lambda_runtime import FunctionTimeoutError, Invocation
from intentbus_local.topology import FunctionInfo

HANDLER = """\
import importlib.util
import json
import os
import threading

import boto3
import helper

CALLS = []


def lambda_handler(event, context):
    CALLS.append(event)
    print("handler says", event.get("say"))
    action = event.get("action")
    if action == "raise":
        raise ValueError("asked to fail")
    if action == "exit":
        os._exit(3)
    if action == "hang":
        threading.Event().wait()
    if action == "unserializable":
        return {"value": object()}
    return {
        "calls": len(CALLS),
        "pid": os.getpid(),
        "environment": dict(os.environ),
        "remaining_ms": context.get_remaining_time_in_millis(),
        "request_id": context.aws_request_id,
        "function_name": context.function_name,
        "memory": context.memory_limit_in_mb,
        "helper": helper.__file__,
        "boto3": boto3.__file__,
        "intentbus_importable": importlib.util.find_spec("intentbus") is not None,
        "cwd": os.getcwd(),
    }
"""


@pytest.fixture
def build(tmp_path: Path) -> BuiltCode:
    (tmp_path / "Fn").mkdir()
    (tmp_path / "Fn" / "app.py").write_text(HANDLER, encoding="utf-8")
    (tmp_path / "Layer" / "python").mkdir(parents=True)
    (tmp_path / "Layer" / "python" / "helper.py").write_text("", encoding="utf-8")
    return BuiltCode(
        directory=tmp_path, template=tmp_path / "template.yaml", layers={"Fn": (tmp_path / "Layer",)}
    )


@pytest.fixture
def clock() -> LocalClock:
    return LocalClock()


@pytest.fixture
def runtime(build: BuiltCode, clock: LocalClock, tmp_path: Path) -> Iterator[BuiltRuntime]:
    function = FunctionInfo(
        logical_id="Fn",
        name="local-Fn",
        arn="arn:aws:lambda:us-east-1:123456789012:function:local-Fn",
        code_dir=build.directory / "Fn",
        handler="app.lambda_handler",
        timeout=2,
        memory_size=256,
        environment={"STAGE": "test"},
        mappings=(),
    )
    built = BuiltRuntime(
        {"Fn": function},
        build,
        clock=clock,
        logs_dir=tmp_path / "logs",
        base_environment={"AWS_REGION": "eu-west-1"},
    )
    yield built
    built.close()


def ok(invocation: Invocation) -> dict[str, object]:
    assert invocation.error is None, invocation.error
    assert isinstance(invocation.response, dict)
    return invocation.response


def test_a_container_stays_warm_and_gets_each_invocations_environment_and_context(
    runtime: BuiltRuntime, clock: LocalClock
) -> None:
    first = ok(runtime.invoke("Fn", {}))
    clock.advance(3600)
    second = ok(runtime.invoke("Fn", {}))

    assert (first["calls"], second["calls"]) == (1, 2)
    assert first["pid"] == second["pid"]
    environment = second["environment"]
    assert isinstance(environment, dict)
    assert environment["STAGE"] == "test"
    assert environment["AWS_REGION"] == "eu-west-1"
    assert environment["AWS_LAMBDA_FUNCTION_NAME"] == "local-Fn"
    assert float(environment[CLOCK_OFFSET_ENV]) == pytest.approx(3600)
    assert second["function_name"] == "local-Fn"
    assert second["memory"] == 256
    assert 0 < int(str(second["remaining_ms"])) <= 2000
    assert second["request_id"] != first["request_id"]
    assert second["cwd"] == str(runtime.sys_path("Fn")[0])


def test_the_import_path_is_the_functions_directory_its_layers_and_the_runtimes_sdk_only(
    runtime: BuiltRuntime, build: BuiltCode
) -> None:
    response = ok(runtime.invoke("Fn", {}))

    state = runtime.describe("Fn")
    layer = build.directory / "Layer" / "python"
    assert state.sys_path[:4] == [
        str(build.directory / "Fn"),
        str(layer / "lib" / "python3.11" / "site-packages"),
        str(layer),
        str(runtime.sdk_dir),
    ]
    assert all("site-packages" not in entry for entry in state.sys_path[4:])  # the standard library only
    assert response["helper"] == str(layer / "helper.py")
    assert str(response["boto3"]).startswith(str(runtime.sdk_dir))
    assert response["intentbus_importable"] is False
    assert state.modules["app"] == str(build.directory / "Fn" / "app.py")


def test_the_handlers_output_goes_to_the_functions_log(runtime: BuiltRuntime) -> None:
    invocation = runtime.invoke("Fn", {"say": "hello"})

    log = runtime.log_path("Fn").read_text(encoding="utf-8").splitlines()
    assert log[0] == f"START RequestId: {invocation.request_id} Version: $LATEST"
    assert log[1] == "handler says hello"
    assert log[2] == f"END RequestId: {invocation.request_id}"
    assert log[3].startswith(f"REPORT RequestId: {invocation.request_id}\tDuration: ")


def test_an_error_is_lambdas_and_the_container_is_kept(runtime: BuiltRuntime) -> None:
    first = ok(runtime.invoke("Fn", {}))
    failed = runtime.invoke("Fn", {"action": "raise"})
    after = ok(runtime.invoke("Fn", {}))

    assert isinstance(failed.error, FunctionError)
    assert failed.error.error_type == "ValueError"
    assert str(failed.error) == "ValueError: asked to fail"
    assert any("asked to fail" in line for line in failed.error.stack_trace)
    assert "[ERROR] ValueError: asked to fail" in runtime.log_path("Fn").read_text(encoding="utf-8")
    assert after["pid"] == first["pid"]
    assert after["calls"] == 3


def test_a_response_that_is_not_json_is_a_marshal_error(runtime: BuiltRuntime) -> None:
    failed = runtime.invoke("Fn", {"action": "unserializable"})

    assert isinstance(failed.error, FunctionError)
    assert failed.error.error_type == "Runtime.MarshalError"


def test_a_container_that_dies_fails_its_invocation_and_the_next_starts_cold(runtime: BuiltRuntime) -> None:
    first = ok(runtime.invoke("Fn", {}))
    died = runtime.invoke("Fn", {"action": "exit"})
    after = ok(runtime.invoke("Fn", {}))

    assert isinstance(died.error, ContainerExited)
    assert "status 3" in str(died.error)
    assert after["pid"] != first["pid"]
    assert after["calls"] == 1


def test_a_handler_past_its_timeout_is_stopped(runtime: BuiltRuntime) -> None:
    first = ok(runtime.invoke("Fn", {}))
    stuck = runtime.invoke("Fn", {"action": "hang"})
    after = ok(runtime.invoke("Fn", {}))

    assert isinstance(stuck.error, FunctionTimeoutError)
    assert 2 <= stuck.duration_seconds < 10
    assert after["pid"] != first["pid"]


def test_tracing_capture_is_refused(runtime: BuiltRuntime) -> None:
    with tracing.capture(), pytest.raises(BuiltModeError, match="in-process runtime"):
        runtime.invoke("Fn", {})


def test_built_mode_needs_mode_server_and_the_builds_own_code(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode='server'"):
        LocalCloud(mode="inprocess", built=tmp_path)
    with pytest.raises(ValueError, match="no template_path or code_dirs"):
        LocalCloud(mode="server", built=tmp_path, code_dirs={"ValidateFunction": tmp_path})


def test_a_missing_build_says_to_run_make_build(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="run 'make build' first"):
        open_build(tmp_path / "nowhere")


def test_a_build_this_machine_cannot_run_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Fn").mkdir()
    (tmp_path / "Layer" / "python").mkdir(parents=True)
    elf_aarch64 = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x03\x00\xb7\x00" + bytes(44)
    (tmp_path / "Layer" / "python" / "_core.so").write_bytes(elf_aarch64)
    (tmp_path / "template.yaml").write_text(
        textwrap.dedent(
            """\
            Resources:
              Fn:
                Type: AWS::Serverless::Function
                Properties:
                  {CodeUri: Fn, Handler: app.lambda_handler, Architectures: [arm64], Layers: [!Ref Layer]}
              Layer:
                Type: AWS::Serverless::LayerVersion
                Properties: {ContentUri: Layer, CompatibleArchitectures: [arm64]}
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.setattr("platform.machine", lambda: "x86_64")

    with pytest.raises(BuildError, match="compiled for arm64 and this machine is x86_64"):
        open_build(tmp_path)

    monkeypatch.setattr("platform.machine", lambda: "aarch64")
    monkeypatch.chdir(tmp_path.parent)
    relative = Path(tmp_path.name)  # as in --built .aws-sam/build: made absolute, for the container's sake
    assert open_build(relative).layers == {"Fn": (tmp_path.resolve() / "Layer",)}
