"""Immutable dataclasses whose methods are written in their module, not generated when their class is made.

``@dataclass(frozen=True)`` writes the source of ``__init__``, ``__setattr__``, ``__delattr__`` and
``__repr__`` (and ``__eq__``/``__hash__``) for each class and compiles it as the class is created: 2.5-4.5 M
instructions a class, and some twenty such classes are made at every stage's cold start. A class derived
from ``Frozen`` and decorated ``@dataclass(init=False, repr=False, eq=False)`` has its ``__init__`` written
by hand (each field set with ``object.__setattr__``, as a frozen dataclass's own does) and inherits the
refusals, so it costs ~0.4 M. It is still a dataclass: ``fields``, ``replace`` and ``asdict`` work on it.
Its ``__repr__``, when it had one, is ``fields_repr``: the text the generated one showed. A class nothing
reads as a dataclass (execute's claim types) is a plain subclass writing whichever of ``__eq__``,
``__hash__`` and ``__repr__`` it needs.

Type checkers see neither as frozen from ``Frozen`` alone (its ``__setattr__`` accepts any name), so such a
dataclass is decorated ``@frozen_dataclass(init=False, repr=False, eq=False)`` and such a plain class
derives from ``FrozenPlain``: to a type checker both are frozen dataclasses (``dataclass_transform`` with
``frozen_default``) and an assignment to a field is an error. At runtime ``frozen_dataclass`` is
``dataclass`` itself (given the same arguments, it makes the same class) and ``FrozenPlain`` is ``Frozen``:
nothing is added to an import or a construction.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, fields
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar, dataclass_transform

    _T = TypeVar("_T")


class Frozen:
    """Assigning or deleting any attribute of an instance raises ``FrozenInstanceError``, with the words of a
    frozen dataclass's own ``__setattr__`` and ``__delattr__``."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


def fields_repr(self: Any) -> str:
    """``Name(field=value, ...)``, each field with ``repr=True`` in its order: what ``@dataclass`` shows."""
    shown = ", ".join(f"{item.name}={getattr(self, item.name)!r}" for item in fields(self) if item.repr)
    return f"{type(self).__qualname__}({shown})"


if TYPE_CHECKING:

    @dataclass_transform(frozen_default=True)
    def frozen_dataclass(
        *, init: bool = True, repr: bool = True, eq: bool = True, unsafe_hash: bool = False
    ) -> Callable[[type[_T]], type[_T]]:
        """``dataclass`` with these arguments, for a ``Frozen`` class (never ``frozen=True``: it refuses)."""

    @dataclass_transform(frozen_default=True)
    class FrozenPlain(Frozen):
        """``Frozen``, for a plain class writing its own ``__init__``: its annotated fields are read-only."""

else:
    frozen_dataclass = dataclass
    FrozenPlain = Frozen
