"""Replacements of moto's code, pinned to the source they replace.

A module that replaces a moto function for speed lists it with the digest of moto's source as found
(``Pins.sources``); ``Pins.changed()`` names those whose source is no longer that one, and the pinned
tests fail on it, so a replacement is looked at again when moto changes the code it copies rather than
kept past it. Where it runs, a module installs its replacements only while ``Pins.holds()``: on a moto
whose code moved (a newer one than ``constraints.txt`` names), the local cloud keeps moto's own code,
slower but never answering differently, and says so once.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from intentbus_local import pin_digests


def source_digest(function: Callable[..., Any]) -> str:
    """The first 16 hex digits of the sha256 of the function's source."""
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


@dataclass
class Pins:
    found_on: str
    """The moto version whose code the digests are of."""
    sources: Mapping[str, str]
    """``module.Class.attribute`` -> ``source_digest`` of moto's source of it (a property: of its getter)."""
    replaced: dict[str, Any] = field(default_factory=dict)
    """``Class.attribute`` -> moto's own, once replaced."""
    _holds: bool | None = field(default=None, init=False, repr=False)

    def holds(self) -> bool:
        """Whether every pinned source is still the one found (checked once): when not, a warning names
        what changed and the caller leaves moto's own code in place."""
        if self._holds is None:
            changed = self.changed()
            self._holds = not changed
            if changed:
                warnings.warn(
                    f"{', '.join(changed)}: not the code found on {self.found_on} that the local cloud "
                    "replaces, so the library's own code is used instead",
                    RuntimeWarning,
                    stacklevel=2,
                )
        return self._holds

    def replace(self, owner: type, name: str, replacement: Any) -> Any:
        """Sets ``owner.name`` (once; the later calls keep the first), returning moto's own."""
        key = f"{owner.__name__}.{name}"
        if key not in self.replaced:
            self.replaced[key] = vars(owner)[name]
            setattr(owner, name, replacement)
        return self.replaced[key]

    @contextlib.contextmanager
    def replaced_while_open(
        self, owner: type, name: str, wrap: Callable[[Any], Any], marker: str
    ) -> Iterator[None]:
        """``owner.name`` is ``wrap(its own)`` while open and the pins hold, its own again after. The
        replacement carries ``marker``: opened again inside, the outer one's stays in place."""
        current = vars(owner)[name]
        if getattr(current, marker, False):
            yield
            return
        self.replaced.setdefault(f"{owner.__name__}.{name}", current)
        if not self.holds():
            yield
            return
        setattr(owner, name, wrap(current))
        try:
            yield
        finally:
            setattr(owner, name, current)

    def moto_original(self, name: str) -> Callable[..., Any]:
        """moto's own ``Class.attribute`` (a property's getter), replaced or not."""
        found = self.replaced.get(name)
        if found is None:
            path = next(dotted for dotted in self.sources if dotted.endswith(f".{name}"))
            module, owner, attribute = _split(path)
            found = vars(getattr(importlib.import_module(module), owner))[attribute]
        return _function(found)

    def inherited_by(self, subclass: type) -> bool:
        """Whether ``subclass`` uses each pinned attribute as the class the pin names defines it (no class
        between them overrides it), so that replacing one for ``subclass`` replaces what it runs."""
        for dotted in self.sources:
            module, owner, attribute = _split(dotted)
            defined = vars(getattr(importlib.import_module(module), owner))[attribute]
            if getattr(subclass, attribute, None) is not defined:
                return False
        return True

    def changed(self) -> list[str]:
        """The pinned names whose moto source is not the one found on ``found_on`` (digests kept per file
        bytes: intentbus_local.pin_digests)."""
        return [
            dotted
            for dotted, digest in self.sources.items()
            if pin_digests.digest(self.moto_original(".".join(_split(dotted)[1:])), source_digest) != digest
        ]


def _split(dotted: str) -> tuple[str, str, str]:
    module, owner, attribute = dotted.rsplit(".", 2)
    return module, owner, attribute


def _function(found: Any) -> Callable[..., Any]:
    if isinstance(found, property):
        return found.fget  # type: ignore[return-value]
    if isinstance(found, classmethod | staticmethod):
        return found.__func__
    return found  # type: ignore[no-any-return]
