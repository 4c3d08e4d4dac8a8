"""Every error the runtime raises on purpose is an IntentbusError with a code of its own."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import intentbus
from intentbus.errors import IntentbusError


def _runtime_errors() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(intentbus.__path__, "intentbus."):
        if module_info.name.startswith("intentbus.testing"):
            continue  # tooling, not the runtime
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, Exception)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = value
    return [found[name] for name in sorted(found)]


def test_every_runtime_error_is_an_intentbus_error_with_its_own_stable_code() -> None:
    errors = _runtime_errors()
    assert len(errors) >= 14  # MalformedInput, NotRecorded, ConfigurationError, PublishError, SendError, ...

    assert [error.__name__ for error in errors if not issubclass(error, IntentbusError)] == []
    codes = [error.code for error in errors if error is not IntentbusError]  # type: ignore[attr-defined]
    assert len(codes) == len(set(codes)), codes
    assert all(re.fullmatch(r"[a-z][a-z_]*", code) for code in codes)


def test_the_former_bases_still_catch_them() -> None:
    from intentbus.registry import DuplicateType, UnknownType

    assert issubclass(UnknownType, LookupError)
    assert issubclass(DuplicateType, ValueError)
