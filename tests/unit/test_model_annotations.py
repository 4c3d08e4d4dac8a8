"""No module that defines a pydantic model postpones its annotations (``from __future__ import annotations``).

With postponed annotations every field's annotation is a string, which pydantic turns back into a type
when it creates the class: a ``ForwardRef`` compiled and evaluated in the module's namespace, per field,
at every import, and so at every cold start of every function that imports the model. With annotations
evaluated as the module runs, pydantic reads the types as they are. Forward references left (a method
returning its own class) are quoted one by one.
"""

import __future__

import importlib
import pkgutil
from types import ModuleType

import pydantic

import intentbus

SCAFFOLD_WORKFLOW = "intentbus_cli.scaffold.orders"
"""The workflow a new project starts from: its models are on that project's stages' cold path."""


def postponing_model_modules(modules: list[ModuleType]) -> list[str]:
    """The modules among ``modules`` that define a pydantic model and postpone their annotations."""
    return sorted(
        module.__name__
        for module in modules
        if getattr(module, "annotations", None) is __future__.annotations
        and any(
            isinstance(value, type)
            and issubclass(value, pydantic.BaseModel)
            and value.__module__ == module.__name__
            for value in vars(module).values()
        )
    )


def _package_modules() -> list[ModuleType]:
    names = [info.name for info in pkgutil.walk_packages(intentbus.__path__, "intentbus.")]
    return [importlib.import_module(name) for name in [*names, SCAFFOLD_WORKFLOW]]


def test_no_model_module_postpones_its_annotations() -> None:
    modules = _package_modules()
    assert len(modules) > 30
    assert "intentbus.envelope" in {module.__name__ for module in modules}

    assert postponing_model_modules(modules) == []


def _module(name: str, source: str) -> ModuleType:
    module = ModuleType(name)
    exec(compile(source, name, "exec"), vars(module))
    return module


def test_the_check_sees_a_model_module_that_postpones() -> None:
    model = "from pydantic import BaseModel\n\nclass Thing(BaseModel):\n    size: int\n"
    postponed = "from __future__ import annotations\n" + model
    plain_helpers = (
        "from __future__ import annotations\n\ndef size(of: list[int]) -> int:\n    return len(of)\n"
    )
    imported_model = "from __future__ import annotations\nfrom pydantic import BaseModel\n"

    modules = [
        _module("postponed", postponed),
        _module("plain", model),
        _module("helpers", plain_helpers),
        _module("imports_only", imported_model),
    ]

    assert postponing_model_modules(modules) == ["postponed"]
