"""A user's path from the wheel: install intentbus[local] outside this checkout, ``intentbus demo`` in an
empty folder, ``intentbus init my-app``, then the new project's own ``make demo`` and ``make test``
(which bootstrap the project's .venv from the wheel folder through PIP_FIND_LINKS).

Slow (a wheel, two virtualenvs with moto and cfn-lint; pip's cache keeps it to a few minutes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.packaging]

REPO = Path(__file__).resolve().parents[2]
STEP_TIMEOUT = 900
NOT_SOURCE = (".git", ".venv*", "build", ".aws-sam", "*.egg-info", ".*_cache", ".local", ".bench", "tests")
"""Top-level entries of the checkout that are not the package's source (nested ones, e.g. the scaffold's
tests/, are)."""


def not_source(directory: str, names: list[str]) -> set[str]:
    top_level = Path(directory) == REPO
    return {
        name
        for name in names
        if name == "__pycache__" or (top_level and any(fnmatch(name, pattern) for pattern in NOT_SOURCE))
    }


def run(command: list[str], *, cwd: Path, env: Mapping[str, str], timings: dict[str, float]) -> str:
    """Runs ``command``; its output, or a failure with the output's tail. Times it by its last words."""
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=STEP_TIMEOUT, check=False
    )
    timings[" ".join(Path(word).name for word in command[:3])] = round(time.monotonic() - started, 1)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{output[-6000:]}"
    return output


def test_a_project_made_by_the_installed_wheel_runs_its_demo_and_passes_its_tests(tmp_path: Path) -> None:
    timings: dict[str, float] = {}
    wheels = tmp_path / "wheels"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"VIRTUAL_ENV", "PYTHONPATH", "INTENTBUS_WORKFLOWS"} and not key.startswith("AWS_")
    }
    env["PIP_FIND_LINKS"] = " ".join(filter(None, [str(wheels), os.environ.get("PIP_FIND_LINKS")]))
    # From a copy: setuptools builds in the source folder, and a build/ left there would ship stale files.
    source = shutil.copytree(REPO, tmp_path / "source", ignore=not_source)
    run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(source)],
        cwd=tmp_path,
        env=env,
        timings=timings,
    )
    (wheel,) = wheels.glob("intentbus-*.whl")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=env, timings=timings)
    run(
        [str(venv / "bin" / "pip"), "install", "--quiet", f"intentbus[local] @ {wheel.as_uri()}"],
        cwd=tmp_path,
        env=env,
        timings=timings,
    )
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    intentbus = str(venv / "bin" / "intentbus")

    empty = tmp_path / "empty"
    empty.mkdir()
    demo = run([intentbus, "demo", "--approve"], cwd=empty, env=env, timings=timings)
    assert "COMPLETED" in demo, demo

    run([intentbus, "init", "my-app"], cwd=tmp_path, env=env, timings=timings)
    project = tmp_path / "my-app"
    project_env = {**env, "PATH": os.pathsep.join(env["PATH"].split(os.pathsep)[1:])}  # its own .venv only
    made_demo = run(["make", "demo"], cwd=project, env=project_env, timings=timings)
    assert "(orders): COMPLETED" in made_demo, made_demo
    assert "(orders): DENIED" in made_demo, made_demo
    made_test = run(["make", "test"], cwd=project, env=project_env, timings=timings)
    assert "6 passed" in made_test, made_test
    assert "failed" not in made_test, made_test
    print(f"\nwheel e2e timings (s): {timings}")
    print(made_test)
