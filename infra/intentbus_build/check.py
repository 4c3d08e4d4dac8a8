"""Checks a ``sam build`` before it is deployed: one line per problem, exit status 1 if any.

* Architecture: every compiled file (any file with an ELF header: ``.so`` and executables) in a
  function's directory or in a layer it uses is for that function's architecture (ELF ``e_machine``:
  0x3E x86_64, 0xB7 aarch64); a layer with compiled code declares ``CompatibleArchitectures``, and they
  include the architecture of every function that uses it.
* The runtime's SDK: no function or layer ships boto3, botocore, s3transfer or their dependencies
  (``lambda_python.RUNTIME_SDK``) unless its Metadata ``BundledSdkReason`` says why.
* Tooling: no function or layer ships intentbus's tooling (the CLI, the local cloud, the build check,
  the fault harness, ``intentbus.testing``) or what only the tooling needs (rich, moto).
* Backends chosen by a parameter: a layer that ships an adapter imported only when a template
  parameter selects it ships what that adapter imports too (``BACKENDS``: Redis as execute's
  idempotency store), so setting the parameter needs no rebuild.
* Size (Lambda's quotas): a function's directory plus all its layers at most 250 MiB unzipped; each
  function's and each layer's .zip at most 50 MiB (the limit for a direct upload; ``sam deploy``
  uploads through S3, where only the unzipped limit applies).

    python -m intentbus_build.check [BUILD_DIR] [--parameter NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from intentbus_build.built_template import Build, BuildError, Function, Layer, read_build
from intentbus_build.elf import compiled_files
from intentbus_build.lambda_python import (
    ARCHITECTURES,
    MIB,
    RUNTIME_SDK,
    SDK_IMPORT_NAMES,
    UNZIPPED_LIMIT,
    ZIPPED_DIRECT_UPLOAD_LIMIT,
    canonical_name,
    layer_paths,
)
from intentbus_build.sizes import unzipped_bytes, zipped_bytes

DEFAULT_BUILD_DIR = Path(".aws-sam/build")
TOOLING = ("intentbus_cli", "intentbus_local", "intentbus_build", "intentbus_faults", "intentbus/testing")
TOOLING_DEPENDENCIES = ("rich", "moto", "pika")
BACKENDS = {"intentbus/adapters/redis_idempotency.py": ("redis", "IdempotencyRedisEndpoint")}
"""An adapter a parameter switches on -> (the package it imports, the parameter)."""
_MACHINE_NAMES = {machine: architecture for architecture, machine in ARCHITECTURES.items()}


@dataclass(frozen=True)
class Size:
    logical_id: str
    unzipped: int
    zipped: int


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    sizes: dict[str, Size] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    """Function logical id -> its directory plus its layers, unzipped."""
    not_checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check(build: Build) -> Report:
    report = Report()
    artifacts: list[Function | Layer] = [*build.functions.values(), *build.layers.values()]
    for artifact in artifacts:
        if not artifact.path.is_dir():
            report.problems.append(f"{artifact.logical_id}: not built ({artifact.path} is missing)")
    for function in build.functions.values():
        report.problems.extend(_architecture_declared(function))
        report.problems.extend(_compiled_code(function.path, _architectures_of([function])))
        report.problems.extend(_runtime_sdk(function.logical_id, [function.path], function.sdk_reason))
        report.problems.extend(_tooling(function.logical_id, [function.path]))
        report.not_checked.extend(f"{function.logical_id}: layer {ref}" for ref in function.external_layers)
    for layer in build.layers.values():
        users = [f for f in build.functions.values() if layer.logical_id in f.layers]
        report.problems.extend(_layer_architectures(layer, users))
        report.problems.extend(_runtime_sdk(layer.logical_id, layer_paths(layer.path), layer.sdk_reason))
        report.problems.extend(_tooling(layer.logical_id, layer_paths(layer.path)))
        report.problems.extend(_backends(layer.logical_id, layer_paths(layer.path)))
    report.sizes = {
        a.logical_id: Size(a.logical_id, unzipped_bytes(a.path), zipped_bytes(a.path))
        for a in artifacts
        if a.path.is_dir()
    }
    report.totals = {
        f.logical_id: sum(report.sizes[p].unzipped for p in (f.logical_id, *f.layers) if p in report.sizes)
        for f in build.functions.values()
    }
    report.problems.extend(_over_limits(report))
    return report


def _over_limits(report: Report) -> Iterator[str]:
    for size in report.sizes.values():
        if size.zipped > ZIPPED_DIRECT_UPLOAD_LIMIT:
            yield f"{size.logical_id}: {_mib(size.zipped)} zipped, over Lambda's 50 MiB for a direct upload"
    for logical_id, total in report.totals.items():
        if total > UNZIPPED_LIMIT:
            yield f"{logical_id}: {_mib(total)} unzipped with its layers, over Lambda's 250 MiB"


def _architecture_declared(function: Function) -> Iterator[str]:
    if len(function.architectures) != 1:
        yield f"{function.logical_id}: Architectures {list(function.architectures)}: Lambda takes exactly one"
    for architecture in function.architectures:
        if architecture not in ARCHITECTURES:
            yield f"{function.logical_id}: unknown architecture {architecture!r} (arm64 or x86_64)"


def _architectures_of(functions: Iterable[Function]) -> dict[str, list[str]]:
    """Architecture -> the functions that need it."""
    needed: dict[str, list[str]] = {}
    for function in functions:
        for architecture in function.architectures:
            needed.setdefault(architecture, []).append(function.logical_id)
    return needed


def _compiled_code(directory: Path, needed: Mapping[str, list[str]]) -> Iterator[str]:
    wanted = {ARCHITECTURES[a]: a for a in needed if a in ARCHITECTURES}
    if not directory.is_dir() or not wanted:
        return
    for path, machine in compiled_files(directory):
        if machine in wanted and len(wanted) == 1:
            continue
        built_for = _MACHINE_NAMES.get(machine, f"machine 0x{machine:02X}")
        for architecture, functions in needed.items():
            if ARCHITECTURES.get(architecture) != machine:
                yield f"{path}: compiled for {built_for}, but {_names(functions)} run on {architecture}"


def _layer_architectures(layer: Layer, users: Sequence[Function]) -> Iterator[str]:
    needed = _architectures_of(users)
    declared = layer.compatible_architectures
    if declared is None:
        if layer.path.is_dir() and next(compiled_files(layer.path), None) is not None:
            yield f"{layer.logical_id}: has compiled code but declares no CompatibleArchitectures"
    else:
        for architecture, functions in needed.items():
            if architecture not in declared:
                yield (
                    f"{layer.logical_id}: CompatibleArchitectures {list(declared)} leave out {architecture}, "
                    f"which {_names(functions)} run on"
                )
    yield from _compiled_code(layer.path, needed)


def _runtime_sdk(logical_id: str, roots: Sequence[Path], reason: str) -> Iterator[str]:
    if reason:
        return
    found: dict[str, Path] = {}
    for root in roots:
        for distribution, path in _sdk_distributions(root):
            found.setdefault(distribution, path)
    for distribution, path in sorted(found.items()):
        yield (
            f"{logical_id}: ships {distribution} ({path}), which the Lambda runtime provides; "
            "leave it out, or say why in the resource's Metadata BundledSdkReason"
        )


def _sdk_distributions(root: Path) -> Iterator[tuple[str, Path]]:
    if not root.is_dir():
        return
    for entry in sorted(root.iterdir()):
        if entry.name.endswith(".dist-info"):
            name = canonical_name(entry.name.removesuffix(".dist-info").rsplit("-", 1)[0])
            if name in RUNTIME_SDK:
                yield name, entry
        elif entry.name.removesuffix(".py") in SDK_IMPORT_NAMES:
            yield SDK_IMPORT_NAMES[entry.name.removesuffix(".py")], entry


def _tooling(logical_id: str, roots: Sequence[Path]) -> Iterator[str]:
    for root in roots:
        for name in (*TOOLING, *TOOLING_DEPENDENCIES):
            if (root / name).exists():
                yield f"{logical_id}: ships {name} ({root / name}), which no deployed function imports"


def _backends(logical_id: str, roots: Sequence[Path]) -> Iterator[str]:
    for adapter, (package, parameter) in BACKENDS.items():
        shipped = [root for root in roots if (root / adapter).exists()]
        if shipped and not any((root / package).is_dir() for root in roots):
            yield (
                f"{logical_id}: ships {adapter} but not {package}, which it imports when {parameter} is set; "
                "add it to the layer's requirements"
            )


def _names(functions: Sequence[str]) -> str:
    if len(functions) <= 3:
        return ", ".join(functions)
    return f"{', '.join(functions[:2])} and {len(functions) - 2} more functions"


def _mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB" if size >= MIB / 10 else f"{size / 1024:.0f} KiB"


def render(build: Build, report: Report) -> str:
    architectures = sorted({a for f in build.functions.values() for a in f.architectures})
    lines = [f"{'artifact':<26} {'unzipped':>10} {'zipped':>10} {'with layers':>12}"]
    for size in report.sizes.values():
        total = report.totals.get(size.logical_id)
        lines.append(
            f"{size.logical_id:<26} {_mib(size.unzipped):>10} {_mib(size.zipped):>10} "
            f"{_mib(total) if total is not None else '':>12}"
        )
    lines.extend(f"not checked (not built here): {item}" for item in report.not_checked)
    lines.extend(f"build check: {problem}" for problem in report.problems)
    verdict = "FAILED" if report.problems else "ok"
    lines.append(
        f"build check {verdict}: {len(build.functions)} functions, {len(build.layers)} layers for "
        f"{', '.join(architectures)}; limits: 250 MiB unzipped per function with its layers, "
        f"50 MiB per .zip (direct upload); {len(report.problems)} problem(s)"
    )
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog="python -m intentbus_build.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", nargs="?", type=Path, default=DEFAULT_BUILD_DIR)
    parser.add_argument(
        "--parameter",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a template parameter the build was made with (as sam build --parameter-overrides)",
    )
    args = parser.parse_args(argv)
    parameters: dict[str, str] = {}
    for item in args.parameter:
        name, sep, value = item.partition("=")
        if not sep or not name:
            parser.error(f"--parameter {item!r}: expected NAME=VALUE")
        parameters[name] = value
    try:
        build = read_build(args.build_dir, parameters)
    except BuildError as error:
        print(f"build check: {error}", file=sys.stderr)
        return 2
    report = check(build)
    print(render(build, report))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
