"""Builds the intentbus Lambda layer's ``python/`` folder: the runtime package and what it needs.

``python -m intentbus_build.layer --target DIR --architecture arm64|x86_64`` installs the wheels of the
runtime's requirements (``intentbus/layer-requirements.txt``) for the architecture, less what the
Lambda python3.11 runtime provides itself (see lambda_python.RUNTIME_SDK), then copies the ``intentbus``
package that this Python imports, less ``intentbus.testing`` (tests import it, never a function).
``--also PATH`` copies a module or package of the project too (e.g. its workflow modules).

This repository's layer (shared/Makefile) and a project made by ``intentbus init`` both build with it.
Standard library and pip only: it runs under ``sam build`` with whichever Python builds the layer.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

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
