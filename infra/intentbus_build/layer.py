"""Builds the intentbus Lambda layer's ``python/`` folder: the runtime package and what it needs.

``python -m intentbus_build.layer --target DIR --architecture arm64|x86_64`` installs the wheels of the
runtime's requirements (``intentbus/layer-requirements.txt``) for the architecture, less what the
Lambda python3.11 runtime provides itself (see lambda_python.RUNTIME_SDK), then copies the ``intentbus``
package that this Python imports, less ``intentbus.testing`` (tests import it, never a function).
``--also PATH`` copies a module or package of the project too (e.g. its workflow modules). Then every
module is compiled for Lambda (``compile_for_lambda``).

This repository's layer (shared/Makefile) and a project made by ``intentbus init`` both build with it.
Standard library and pip only: it runs under ``sam build`` with whichever Python builds the layer.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import py_compile
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from intentbus_build.lambda_python import PYTHON_VERSION
from intentbus_build.layer_requirements import pins

PLATFORMS = {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}
REQUIREMENTS_FILE = "layer-requirements.txt"
LEFT_OUT = ("testing", "__pycache__")


def runtime_package() -> Path:
    """The folder of the ``intentbus`` package this Python would import (found, not imported)."""
    spec = importlib.util.find_spec("intentbus")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("intentbus_build.layer: the intentbus package is not installed for this Python")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def build(target: Path, *, architecture: str, package: Path, also: Sequence[Path] = ()) -> None:
    wheels = [
        *("--platform", PLATFORMS[architecture]),
        *("--implementation", "cp", "--python-version", "3.11", "--only-binary=:all:"),
    ]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "--quiet"]
    requirements = package / REQUIREMENTS_FILE
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        resolve = [*pip, "--dry-run", "--target", f"{scratch}/resolve", *wheels, "--report", str(report)]
        subprocess.run([*resolve, "-r", str(requirements)], check=True)
        pinned = Path(scratch) / "layer-requirements.txt"
        pinned.write_text("\n".join(pins(json.loads(report.read_text(encoding="utf-8")))) + "\n")
        subprocess.run([*pip, "--no-deps", "--target", str(target), *wheels, "-r", str(pinned)], check=True)
    _copy(package, target / "intentbus")
    for path in also:
        _copy(path, target / path.name)
    compile_for_lambda(target)


def compile_for_lambda(target: Path) -> bool:
    """Every module under ``target`` compiled to bytecode that Lambda's Python uses as it is; ``False``
    (and nothing compiled) when this Python is not the runtime's version, whose bytecode Lambda ignores.

    Lambda's /opt is read-only, so a module without bytecode is compiled from its source at every cold
    start (the intentbus package alone, copied without any: ~45-55 ms of each stage's), and a
    timestamp-checked ``.pyc`` (pip's kind) is stale, hence compiled again every time too, whenever the
    source's time it recorded did not survive zipping the layer (a zip keeps times to two seconds).
    Unchecked-hash ``.pyc`` files record no time and are not checked against the source: right for a
    layer, which is never edited in place."""
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if running != PYTHON_VERSION:
        print(
            f"intentbus_build.layer: not compiled: this is Python {running}, Lambda runs {PYTHON_VERSION}",
            file=sys.stderr,
        )
        return False
    # A file that does not compile would not import either; its error is Python's, at import, as before.
    compileall.compile_dir(
        target,
        quiet=2,
        force=True,
        workers=0,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    return True


def _copy(source: Path, destination: Path) -> None:
    if destination.exists():
        shutil.rmtree(destination) if destination.is_dir() else destination.unlink()
    if source.is_dir():
        shutil.copytree(source, destination, ignore=shutil.ignore_patterns(*LEFT_OUT))
    else:
        shutil.copyfile(source, destination)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m intentbus_build.layer", description=__doc__)
    parser.add_argument("--target", type=Path, required=True, help="the layer's python/ folder")
    parser.add_argument("--architecture", choices=sorted(PLATFORMS), required=True)
    parser.add_argument(
        "--package", type=Path, help="the intentbus package to ship (default: the one this Python imports)"
    )
    parser.add_argument("--also", type=Path, action="append", default=[], metavar="PATH")
    args = parser.parse_args(argv)
    missing = [str(path) for path in args.also if not path.exists()]
    if missing:
        print(f"intentbus_build.layer: no such module or package: {', '.join(missing)}", file=sys.stderr)
        return 2
    build(
        args.target.resolve(),
        architecture=args.architecture,
        package=(args.package or runtime_package()).resolve(),
        also=[path.resolve() for path in args.also],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
