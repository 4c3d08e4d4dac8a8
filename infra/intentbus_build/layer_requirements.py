"""What the layer installs: pip's resolution of its requirements, less what the runtime provides.

Run by the layer's Makefile (``shared/Makefile``) under ``sam build``, with the Python that builds it:
standard library only. It reads the report of ``pip install --dry-run --report FILE`` and prints one
``name==version`` line per distribution to install with ``--no-deps``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from intentbus_build.lambda_python import RUNTIME_SDK, canonical_name


def pins(report: Mapping[str, Any], *, provided: Iterable[str] = RUNTIME_SDK) -> list[str]:
    left_out = {canonical_name(name) for name in provided}
    resolved = [item["metadata"] for item in report["install"]]
    return sorted(
        f"{canonical_name(m['name'])}=={m['version']}"
        for m in resolved
        if canonical_name(m["name"]) not in left_out
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m intentbus_build.layer_requirements PIP_REPORT.json", file=sys.stderr)
        return 2
    report = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    print("\n".join(pins(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
