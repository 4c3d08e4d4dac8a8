"""Tables for people: rich in a terminal, plain aligned columns anywhere else (pipes, files, tests)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO


def plain(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, a dashed line under the headers."""
    table = [list(headers), *[list(row) for row in rows]]
    widths = [max(len(line[column]) for line in table) for column in range(len(headers))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in table
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def show(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    out: TextIO | None = None,
) -> None:
    stream = out if out is not None else sys.stdout
    if _is_terminal(stream):
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(title=title, header_style="bold", expand=False)
        for header in headers:
            table.add_column(Text(header))
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))  # cells are data, never markup
        Console(file=stream).print(table)
        return
    if title:
        print(title, file=stream)
    print(plain(headers, rows), file=stream)


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
