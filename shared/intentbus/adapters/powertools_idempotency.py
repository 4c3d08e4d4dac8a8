"""Powertools' Idempotency utility, imported without boto3 (what the execute stage's cold start pays for).

Powertools' idempotency package imports its DynamoDB persistence layer, whose module imports boto3 for two
things only: boto3's version (whether PutItem may ask for ``ReturnValuesOnConditionCheckFailure``) and
boto3's ``TypeDeserializer`` (to read a stored record back). boto3 brings s3transfer and multiprocessing
with it, ~12 ms of CPU at the execute stage's first record, though intentbus hands Powertools a botocore
client. So while Powertools' package is first imported, ``boto3`` and ``boto3.dynamodb.types`` are
stand-ins: the version is read from the line of boto3's own source that sets ``__version__`` (the value an
import would give; else from boto3's installed distribution, else from boto3 itself), the deserializer is
boto3's own,
made when a record is first read back (never on the happy path), and anything else Powertools asks of
``boto3`` (a session, when it is given no client) imports the real boto3 then. The stand-ins leave
``sys.modules`` as soon as Powertools is imported, so every later ``import boto3`` is the real one; a
process that has already imported boto3 (the local cloud, tests) imports Powertools as it is.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import sys
import types
from typing import Any

POWERTOOLS_IDEMPOTENCY = "aws_lambda_powertools.utilities.idempotency"


def import_powertools_idempotency() -> None:
    """Imports Powertools' idempotency package, with boto3's stand-ins if boto3 is not imported yet."""
    if POWERTOOLS_IDEMPOTENCY in sys.modules or "boto3" in sys.modules:
        importlib.import_module(POWERTOOLS_IDEMPOTENCY)
        return
    stand_ins = {"boto3": _Boto3(), "boto3.dynamodb.types": _DynamoDBTypes()}
    sys.modules.update(stand_ins)
    try:
        importlib.import_module(POWERTOOLS_IDEMPOTENCY)
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


class _Boto3(types.ModuleType):
    """``boto3`` as Powertools' DynamoDB layer uses it: its version, else the real module's attribute."""

    def __init__(self) -> None:
        super().__init__("boto3")

    def __getattr__(self, name: str) -> Any:
        if name == "__version__":
            found = boto3_version()
            if found is not None:
                return found
        elif name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module("boto3"), name)


_VERSION_LINE = "__version__ = "


def boto3_version() -> str | None:
    """The ``__version__`` boto3 would have, without importing it: read from its source's assignment (the
    distribution's metadata, looked up by name, searches every path entry and parses the METADATA file,
    ~9 M instructions of the execute stage's cold start), else from that metadata; ``None`` if neither."""
    spec = importlib.machinery.PathFinder.find_spec("boto3")
    if spec is not None and spec.origin is not None:
        found = version_in_source(spec.origin)
        if found is not None:
            return found
    try:
        return importlib.metadata.version("boto3")
    except importlib.metadata.PackageNotFoundError:  # installed without its metadata
        return None


def version_in_source(path: str) -> str | None:
    """The string literal of a module's top-level ``__version__ = '...'`` line; ``None`` if it has none."""
    try:
        with open(path, encoding="utf-8") as source:
            for line in source:
                if line.startswith(_VERSION_LINE):
                    literal = line[len(_VERSION_LINE) :].strip()
                    quoted = len(literal) > 2 and literal[0] == literal[-1] and literal[0] in "'\""
                    return literal[1:-1] if quoted else None
    except (OSError, UnicodeDecodeError):
        return None
    return None


class _DynamoDBTypes(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("boto3.dynamodb.types")
        self.TypeDeserializer = _TypeDeserializer


class _TypeDeserializer:
    """boto3's ``TypeDeserializer``, made on the first record read back."""

    def __init__(self) -> None:
        self._deserializer: Any = None

    def deserialize(self, value: Any) -> Any:
        if self._deserializer is None:
            from boto3.dynamodb.types import TypeDeserializer

            self._deserializer = TypeDeserializer()
        return self._deserializer.deserialize(value)


import_powertools_idempotency()

# What the runtime uses of it, imported from here so that the stand-ins above come first.
from aws_lambda_powertools.utilities.idempotency import (  # noqa: E402
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (  # noqa: E402
    IdempotencyItemAlreadyExistsError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer  # noqa: E402
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord  # noqa: E402

__all__ = [
    "BasePersistenceLayer",
    "DataRecord",
    "DynamoDBPersistenceLayer",
    "IdempotencyConfig",
    "IdempotencyItemAlreadyExistsError",
    "IdempotencyValidationError",
    "idempotent_function",
]
