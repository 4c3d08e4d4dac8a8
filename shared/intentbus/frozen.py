"""The base of a hand-written immutable class, as a frozen dataclass behaves but cheaper to create.

``dataclasses`` writes a frozen class's ``__init__``, ``__setattr__`` and ``__delattr__`` (and its
``__eq__``, ``__hash__`` and ``__repr__`` unless told not to) as source text and compiles it when the class
is created: 0.6-3.5 M instructions a class at every cold start that creates it. A subclass of ``Frozen``
writes its ``__init__`` (setting each field with ``object.__setattr__``) and whatever comparison or
repr it needs by hand; they are compiled once, into the module's bytecode.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any, NoReturn


class Frozen:
    """An instance whose attributes, once its ``__init__`` has set them, are neither assigned nor deleted:
    either raises ``dataclasses.FrozenInstanceError``, as on a frozen dataclass."""

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
