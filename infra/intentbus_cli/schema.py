"""``intentbus schema export``: JSON Schema of every registered type, for producers and registries."""

from __future__ import annotations

import json
from pathlib import Path

from intentbus.catalog import Catalog


def export(catalog: Catalog, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, schema in catalog.types.json_schemas().items():
        path = out_dir / f"{name}.schema.json"
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
