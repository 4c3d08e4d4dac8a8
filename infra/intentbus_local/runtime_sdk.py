"""A stand-in for the AWS SDK that Lambda's python3.11 runtime bundles: links to this environment's copies.

Lambda puts its own boto3, botocore and their dependencies on ``sys.path`` after the function's code and
its layers; a built function's container gets a directory of links to the same distributions here.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from intentbus_build.lambda_python import RUNTIME_SDK


def link_runtime_sdk(target: Path) -> Path:
    """Links every top-level entry (packages, modules, dist-info) of each RUNTIME_SDK distribution."""
    target.mkdir(parents=True, exist_ok=True)
    for name in sorted(RUNTIME_SDK):
        distribution = importlib.metadata.distribution(name)
        tops = {Path(f).parts[0] for f in distribution.files or ()} - {"..", "__pycache__"}
        for top in sorted(tops):
            source = Path(str(distribution.locate_file(top)))
            link = target / top
            if source.exists() and not link.exists():
                link.symlink_to(source, target_is_directory=source.is_dir())
    return target
