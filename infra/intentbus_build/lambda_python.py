"""Facts about Lambda's python3.11 runtime that a build, its check and the local cloud's built mode share."""

from __future__ import annotations

import platform
import re
from pathlib import Path

PYTHON_VERSION = "3.11"

RUNTIME_SDK = frozenset({"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"})
"""Distributions the runtime provides itself: the AWS SDK for Python and its dependencies. A layer or a
function that ships them shadows the runtime's copies (/opt/python comes first on sys.path), a mix of
SDK versions that AWS does not support."""

SDK_IMPORT_NAMES = {
    "boto3": "boto3",
    "botocore": "botocore",
    "s3transfer": "s3transfer",
    "jmespath": "jmespath",
    "dateutil": "python-dateutil",
    "six": "six",
    "urllib3": "urllib3",
}
"""Top-level import name -> the RUNTIME_SDK distribution it belongs to."""

ARCHITECTURES = {"x86_64": 0x3E, "arm64": 0xB7}
"""Lambda architecture -> the ELF ``e_machine`` its compiled code must have (EM_X86_64, EM_AARCH64)."""

LAMBDA_DEFAULT_ARCHITECTURE = "x86_64"
_HOST_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}

MIB = 1024 * 1024
UNZIPPED_LIMIT = 250 * MIB
"""A function's code and all its layers, unzipped."""
ZIPPED_DIRECT_UPLOAD_LIMIT = 50 * MIB
"""One .zip (a function's or a layer's) uploaded directly to Lambda; through S3, as ``sam deploy`` does,
only the unzipped limit applies."""


def canonical_name(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Python_DateUtil`` -> ``python-dateutil``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def layer_paths(layer_dir: Path) -> list[Path]:
    """Where the runtime imports from in a layer (mounted at /opt), in sys.path order."""
    python = layer_dir / "python"
    return [python / "lib" / f"python{PYTHON_VERSION}" / "site-packages", python]


def host_architecture() -> str | None:
    """This machine's Lambda architecture name, None if Lambda has none like it."""
    return _HOST_MACHINES.get(platform.machine().lower())
