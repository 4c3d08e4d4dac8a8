"""The build check (intentbus_build) on synthetic builds: ELF headers, layer trees and built templates."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Literal

import pytest

from intentbus_build import check as build_check
from intentbus_build.built_template import BuildError, read_build
from intentbus_build.elf import machine_of
from intentbus_build.lambda_python import ARCHITECTURES, RUNTIME_SDK
from intentbus_build.layer import PLATFORMS, compile_for_lambda
from intentbus_build.layer_requirements import pins
from intentbus_local.template import read_sam

EM_X86_64 = 0x3E
EM_AARCH64 = 0xB7
SITE = "python/lib/python3.11/site-packages"


def elf_header(machine: int, *, big_endian: bool = False) -> bytes:
    order: Literal["little", "big"] = "big" if big_endian else "little"
    ident = b"\x7fELF" + bytes([2, 2 if big_endian else 1, 1]) + bytes(9)
    return ident + (3).to_bytes(2, order) + machine.to_bytes(2, order) + bytes(44)


def write(path: Path, content: bytes = b"pass\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def make_build(
    tmp_path: Path,
    *,
    compatible: str | None = "[!Ref Architecture]",
    layer_metadata: str = "",
) -> Path:
    """A built template like sam build writes for this repo's: two functions sharing one layer."""
    build = tmp_path / "build"
    layer_properties = "      ContentUri: IntentbusLayer\n"
    if compatible is not None:
        layer_properties += f"      CompatibleArchitectures: {compatible}\n"
    template = (
        textwrap.dedent(
            """\
            Transform: AWS::Serverless-2016-10-31
            Parameters:
              Architecture: {Type: String, Default: arm64}
            Globals:
              Function:
                Runtime: python3.11
                Architectures: [!Ref Architecture]
                Layers: [!Ref IntentbusLayer]
            Resources:
              ValidateFunction:
                Type: AWS::Serverless::Function
                Properties:
                  CodeUri: ValidateFunction
                  Handler: app.lambda_handler
              DecideFunction:
                Type: AWS::Serverless::Function
                Properties:
                  CodeUri: DecideFunction
                  Handler: app.lambda_handler
            """
        )
        + "  IntentbusLayer:\n    Type: AWS::Serverless::LayerVersion\n    Properties:\n"
        + layer_properties
        + (f"    Metadata:\n{layer_metadata}" if layer_metadata else "")
    )
    write(build / "template.yaml", template.encode())
    for function in ("ValidateFunction", "DecideFunction"):
        write(build / function / "app.py")
    write(build / "IntentbusLayer" / "python" / "intentbus" / "__init__.py")
    return build


def problems(build: Path, **parameters: str) -> list[str]:
    return build_check.check(read_build(build, parameters)).problems


# ---------------------------------------------------------------------- ELF headers


def test_the_machine_is_read_from_bytes_18_and_19_in_the_headers_byte_order() -> None:
    assert machine_of(elf_header(EM_X86_64)) == EM_X86_64
    assert machine_of(elf_header(EM_AARCH64)) == EM_AARCH64
    assert machine_of(elf_header(EM_AARCH64, big_endian=True)) == EM_AARCH64
    assert machine_of(b"#!/bin/sh\n" + bytes(30)) is None
    assert machine_of(b"\x7fELF") is None  # too short to hold e_machine


# ---------------------------------------------------------------------- architecture


def test_a_build_whose_compiled_code_matches_its_functions_passes(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    write(build / "IntentbusLayer" / "python" / "pydantic_core" / "_core.so", elf_header(EM_AARCH64))
    write(build / "IntentbusLayer" / SITE / "wrapt" / "_wrappers.so", elf_header(EM_AARCH64))

    assert problems(build) == []


def test_x86_64_code_in_the_layer_of_arm64_functions_is_one_line_per_file(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    so = write(build / "IntentbusLayer" / "python" / "pydantic_core" / "_core.so", elf_header(EM_X86_64))
    write(build / "IntentbusLayer" / "python" / "wrapt" / "_wrappers.so", elf_header(EM_AARCH64))

    assert problems(build) == [
        f"{so}: compiled for x86_64, but ValidateFunction, DecideFunction run on arm64",
    ]


def test_the_architecture_parameter_the_build_was_made_with_decides(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    write(build / "IntentbusLayer" / "python" / "_core.so", elf_header(EM_X86_64))

    assert problems(build, Architecture="x86_64") == []
    assert len(problems(build, Architecture="arm64")) == 1


def test_compiled_code_in_a_functions_own_directory_is_checked_too(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    binary = write(build / "DecideFunction" / "bin" / "tool", elf_header(EM_X86_64))

    assert problems(build) == [f"{binary}: compiled for x86_64, but DecideFunction run on arm64"]


def test_a_layer_with_compiled_code_must_declare_its_architectures(tmp_path: Path) -> None:
    build = make_build(tmp_path, compatible=None)
    write(build / "IntentbusLayer" / "python" / "_core.so", elf_header(EM_AARCH64))

    assert problems(build) == ["IntentbusLayer: has compiled code but declares no CompatibleArchitectures"]


def test_a_layer_must_be_compatible_with_every_function_that_uses_it(tmp_path: Path) -> None:
    build = make_build(tmp_path, compatible="[x86_64]")

    assert problems(build) == [
        "IntentbusLayer: CompatibleArchitectures ['x86_64'] leave out arm64, "
        "which ValidateFunction, DecideFunction run on"
    ]


def test_a_function_on_two_architectures_is_refused(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    template = build / "template.yaml"
    template.write_text(
        template.read_text().replace(
            "      CodeUri: DecideFunction\n",
            "      CodeUri: DecideFunction\n      Architectures: [x86_64]\n",
        )
    )

    found = problems(build)

    assert "DecideFunction: Architectures ['arm64', 'x86_64']: Lambda takes exactly one" in found


# ---------------------------------------------------------------------- the runtime's SDK


@pytest.mark.parametrize(
    ("entry", "distribution"),
    [
        ("botocore-1.44.8.dist-info/METADATA", "botocore"),
        ("boto3/__init__.py", "boto3"),
        ("s3transfer/__init__.py", "s3transfer"),
        ("python_dateutil-2.9.0.post0.dist-info/METADATA", "python-dateutil"),
        ("six.py", "six"),
    ],
)
def test_a_layer_that_ships_the_runtimes_sdk_is_refused(
    tmp_path: Path, entry: str, distribution: str
) -> None:
    build = make_build(tmp_path)
    write(build / "IntentbusLayer" / "python" / entry)

    (problem,) = problems(build)

    assert problem.startswith(f"IntentbusLayer: ships {distribution} (")
    assert "BundledSdkReason" in problem


def test_the_sdk_in_a_layers_site_packages_is_found_too(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    write(build / "IntentbusLayer" / SITE / "botocore" / "__init__.py")

    assert [p.split(" (")[0] for p in problems(build)] == ["IntentbusLayer: ships botocore"]


def test_a_documented_reason_lets_a_layer_ship_the_sdk(tmp_path: Path) -> None:
    build = make_build(
        tmp_path, layer_metadata="      BundledSdkReason: needs botocore 1.44 for Bedrock's Converse API\n"
    )
    write(build / "IntentbusLayer" / "python" / "botocore" / "__init__.py")

    assert problems(build) == []


def test_a_function_that_ships_the_sdk_is_refused(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    write(build / "ValidateFunction" / "boto3-1.44.8.dist-info" / "METADATA")

    assert [p.split(" (")[0] for p in problems(build)] == ["ValidateFunction: ships boto3"]


@pytest.mark.parametrize(
    "entry",
    [
        "intentbus_cli/main.py",
        "intentbus_local/cloud.py",
        "intentbus/testing/__init__.py",
        "rich/__init__.py",
    ],
)
def test_a_layer_that_ships_the_tooling_is_refused(tmp_path: Path, entry: str) -> None:
    build = make_build(tmp_path)
    write(build / "IntentbusLayer" / "python" / entry)

    (problem,) = problems(build)

    assert problem.startswith(f"IntentbusLayer: ships {entry.rsplit('/', 1)[0]} (")


# ---------------------------------------------------------------------- backends chosen by a parameter


def test_a_layer_with_the_redis_adapter_but_no_redis_is_refused(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    write(build / "IntentbusLayer" / "python" / "intentbus" / "adapters" / "redis_idempotency.py")

    (problem,) = problems(build)

    assert problem.startswith("IntentbusLayer: ships intentbus/adapters/redis_idempotency.py but not redis")
    write(build / "IntentbusLayer" / "python" / "redis" / "__init__.py")
    assert problems(build) == []


# ---------------------------------------------------------------------- sizes


def test_a_function_over_250_mib_with_its_layers_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = make_build(tmp_path)
    write(build / "IntentbusLayer" / "python" / "data.bin", bytes(3000))
    monkeypatch.setattr(build_check, "UNZIPPED_LIMIT", 2500)  # the real one needs 250 MiB of files

    found = problems(build)

    assert len(found) == 2
    assert found[0].startswith("ValidateFunction: ")
    assert found[0].endswith("unzipped with its layers, over Lambda's 250 MiB")


def test_a_zip_over_50_mib_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build = make_build(tmp_path)
    write(
        build / "IntentbusLayer" / "python" / "random.bin", random.Random(7).randbytes(4096)
    )  # no deflating
    monkeypatch.setattr(build_check, "ZIPPED_DIRECT_UPLOAD_LIMIT", 1024)

    found = problems(build)

    assert len(found) == 1
    assert found[0].startswith("IntentbusLayer: ")
    assert found[0].endswith("zipped, over Lambda's 50 MiB for a direct upload")


def test_sizes_count_the_layer_in_every_function_that_uses_it(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    write(build / "IntentbusLayer" / "python" / "data.bin", bytes(10_000))

    report = build_check.check(read_build(build))

    layer = report.sizes["IntentbusLayer"].unzipped
    assert layer >= 10_000
    assert report.totals["ValidateFunction"] == layer + report.sizes["ValidateFunction"].unzipped


# ---------------------------------------------------------------------- the command


def test_the_command_prints_one_line_per_problem_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = make_build(tmp_path)
    write(build / "IntentbusLayer" / "python" / "_core.so", elf_header(EM_X86_64))
    write(build / "IntentbusLayer" / "python" / "botocore" / "__init__.py")

    assert build_check.main([str(build)]) == 1

    lines = capsys.readouterr().out.splitlines()
    assert len([line for line in lines if line.startswith("build check: ")]) == 2
    assert lines[-1].startswith("build check FAILED: 2 functions, 1 layers for arm64")


def test_the_command_passes_a_good_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build = make_build(tmp_path)

    assert build_check.main([str(build), "--parameter", "Architecture=x86_64"]) == 0

    assert (
        capsys.readouterr()
        .out.splitlines()[-1]
        .startswith("build check ok: 2 functions, 1 layers for x86_64")
    )


def test_a_missing_build_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build_check.main([str(tmp_path / "nowhere")]) == 2

    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "run 'make build' first" in error


def test_a_bad_parameter_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build = make_build(tmp_path)

    with pytest.raises(SystemExit) as exited:
        build_check.main([str(build), "--parameter", "Architecture"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1

    with pytest.raises(BuildError, match="no parameter Arch"):
        read_build(build, {"Arch": "x86_64"})


# ---------------------------------------------------------------------- what the layer installs


def test_the_layer_installs_pips_resolution_less_the_runtimes_sdk() -> None:
    report = {
        "install": [
            {"metadata": {"name": name, "version": version}}
            for name, version in [
                ("aws_lambda_powertools", "3.37.0"),
                ("pydantic_core", "2.50.5"),
                ("botocore", "1.44.8"),
                ("Python-DateUtil", "2.9.0.post0"),
                ("urllib3", "2.8.0"),
                ("wrapt", "2.5.2"),
            ]
        ]
    }

    assert pins(report) == ["aws-lambda-powertools==3.37.0", "pydantic-core==2.50.5", "wrapt==2.5.2"]
    assert {"boto3", "botocore", "s3transfer"} <= RUNTIME_SDK


def test_the_layer_runs_from_its_bytecode_whatever_zipping_did_to_its_file_times(tmp_path: Path) -> None:
    """Lambda cannot write bytecode into a layer (/opt is read-only): a module without it is compiled at
    every cold start, and so is one whose timestamp-checked bytecode a zip's two-second times made stale.
    The built layer's bytecode is used as it is: here, after the source changed size and time."""
    layer = tmp_path / "python"
    write(layer / "shipped" / "__init__.py", b"")
    module = write(layer / "shipped" / "module.py", b'ORIGIN = "bytecode"\n')
    stale = write(layer / "shipped" / "__pycache__" / f"module.{sys.implementation.cache_tag}.pyc", b"old")

    assert compile_for_lambda(layer) is True
    module.write_bytes(b'ORIGIN = "compiled again at import"\n')
    os.utime(module, (1, 1))
    imported = subprocess.run(
        [sys.executable, "-c", "import shipped.module as m; print(m.ORIGIN)"],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(layer),
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        capture_output=True,
        text=True,
        check=True,
    )

    assert imported.stdout.strip() == "bytecode"
    assert stale.read_bytes() != b"old"


# ---------------------------------------------------------------------- the template


def test_one_parameter_sets_the_functions_and_the_layers_architecture() -> None:
    repo = Path(__file__).resolve().parents[2]
    sam = read_sam(repo / "template.yaml")
    by_parameter = [{"Ref": "Architecture"}]
    layer = sam["Resources"]["IntentbusLayer"]

    assert set(sam["Parameters"]["Architecture"]["AllowedValues"]) == set(ARCHITECTURES)
    assert sam["Globals"]["Function"]["Architectures"] == by_parameter
    assert layer["Properties"]["CompatibleArchitectures"] == by_parameter
    assert layer["Metadata"]["BuildArchitecture"] == {"Ref": "Architecture"}
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    makefile = (repo / "shared" / "Makefile").read_text(encoding="utf-8")
    assert f"ARCHITECTURE ?= {sam['Parameters']['Architecture']['Default']}\n" in makefile
    assert set(PLATFORMS) == set(ARCHITECTURES)
    project_layer = (repo / "infra" / "intentbus_cli" / "scaffold" / "layer" / "Makefile").read_text()
    for layer_makefile in (makefile, project_layer):  # this repo's layer and a project's build alike
        assert "-m intentbus_build.layer --target" in layer_makefile
        assert "--architecture $(ARCHITECTURE)" in layer_makefile


def test_a_conditional_layer_counts_only_where_its_condition_holds(tmp_path: Path) -> None:
    """``!If [UsingOtelCollectorLayer, !Ref OtelCollectorLayerArn, !Ref AWS::NoValue]``, as deployed."""
    build = make_build(tmp_path)
    template = (build / "template.yaml").read_text()
    template = (
        template.replace("Parameters:\n", "Parameters:\n  CollectorArn: {Type: String, Default: ''}\n")
        .replace(
            "Globals:\n", "Conditions:\n  UsingCollector: !Not [!Equals [!Ref CollectorArn, '']]\nGlobals:\n"
        )
        .replace(
            "Layers: [!Ref IntentbusLayer]",
            "Layers: [!Ref IntentbusLayer, !If [UsingCollector, !Ref CollectorArn, !Ref AWS::NoValue]]",
        )
    )
    (build / "template.yaml").write_text(template)

    left_out = read_build(build).functions["ValidateFunction"]
    assert left_out.layers == ("IntentbusLayer",)
    assert left_out.external_layers == ()
    arn = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"
    added = read_build(build, {"CollectorArn": arn}).functions["ValidateFunction"]
    assert added.external_layers == (json.dumps({"Ref": "CollectorArn"}),)
