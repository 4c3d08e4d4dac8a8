"""The pins' digests kept per source file's bytes (intentbus_local.pin_digests): the same digest as
``source_digest`` for every pinned function, computed once, and recomputed when the file changes."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import intentbus_local
from intentbus_local import pin_digests
from intentbus_local.pinning import Pins, _function, _split, source_digest


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("INTENTBUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(pin_digests, "_files", {})
    monkeypatch.setattr(pin_digests, "_kept", {})
    return tmp_path / "cache"


def _pinned_functions() -> list[Callable[..., Any]]:
    """Every function a ``Pins`` of the local cloud names, as ``Pins.changed`` reads it."""
    functions = []
    for info in pkgutil.iter_modules(intentbus_local.__path__, "intentbus_local."):
        module = importlib.import_module(info.name)
        for pins in [value for value in vars(module).values() if isinstance(value, Pins)]:
            for dotted in pins.sources:
                module_name, owner, attribute = _split(dotted)
                found = vars(getattr(importlib.import_module(module_name), owner))[attribute]
                functions.append(_function(found))
    return functions


def _counted(calls: list[Callable[..., Any]]) -> Callable[[Callable[..., Any]], str]:
    def compute(function: Callable[..., Any]) -> str:
        calls.append(function)
        return source_digest(function)

    return compute


def test_every_pinned_function_s_digest_is_its_source_digest_and_is_computed_once(own_cache: Path) -> None:
    functions = _pinned_functions()
    assert len(functions) > 100
    computed: list[Callable[..., Any]] = []
    first = [pin_digests.digest(f, _counted(computed)) for f in functions]
    assert first == [source_digest(f) for f in functions]
    assert len(computed) == len({id(f) for f in functions})  # one computation a function

    pin_digests._files.clear()
    pin_digests._kept.clear()  # as a later process finds them: on disk
    again: list[Callable[..., Any]] = []
    assert [pin_digests.digest(f, _counted(again)) for f in functions] == first
    assert again == []
    assert (own_cache / pin_digests.FILE_NAME).is_file()


def _module(folder: Path, name: str, text: str) -> ModuleType:
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_a_changed_file_is_a_new_key_never_the_old_digest(
    own_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    before = _module(tmp_path, "pinned_here", "def f(x):\n    return x + 1\n")
    kept = pin_digests.digest(before.f, source_digest)
    # the same first line, another body: the file's bytes differ
    after = _module(tmp_path, "pinned_here", "def f(x):\n    return x + 2\n")
    pin_digests._files.clear()  # a later process reads the file anew
    assert pin_digests.digest(after.f, source_digest) == source_digest(after.f) != kept


def test_without_a_usable_cache_each_digest_is_computed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("INTENTBUS_CACHE_DIR", str(blocked))
    monkeypatch.setattr(pin_digests, "_files", {})
    monkeypatch.setattr(pin_digests, "_kept", {})
    function = _pinned_functions()[0]
    computed: list[Callable[..., Any]] = []
    assert pin_digests.digest(function, _counted(computed)) == source_digest(function)
    assert pin_digests.digest(function, _counted(computed)) == source_digest(function)
    assert len(computed) == 1  # kept in the process, though not on disk
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / pin_digests.FILE_NAME).write_text("{not json")
    monkeypatch.setenv("INTENTBUS_CACHE_DIR", str(tmp_path / "cache"))
    assert pin_digests.digest(function, _counted(computed)) == source_digest(function)


def test_what_has_no_source_file_takes_source_digest(own_cache: Path) -> None:
    namespace: dict[str, Any] = {}
    exec("def g():\n    return 1\n", namespace)  # a function whose file is "<string>"
    with pytest.raises(OSError, match="could not get source code"):
        source_digest(namespace["g"])
    with pytest.raises(OSError, match="could not get source code"):
        pin_digests.digest(namespace["g"], source_digest)
