"""What a stage learns while it handles a record and its span should say (model tokens, the tool).

The stage cores call ``note`` and know nothing of tracing; the handler opens a ``collecting`` scope
per record and hands the notes to the record's span (intentbus.spans). Outside a scope ``note`` does
nothing, so the cores run the same under tests, the in-memory pipeline and the CLI.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

Value = str | int | float | bool

MODEL_INPUT_TOKENS = "gen_ai.usage.input_tokens"
MODEL_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
MODEL_LATENCY_MS = "intentbus.decide.latency_ms"
AGENT = "intentbus.agent"
TOOL = "intentbus.tool"
ATTEMPT = "intentbus.attempt"
COMMAND_TYPE = "intentbus.command_type"

_notes: ContextVar[dict[str, Value] | None] = ContextVar("intentbus_span_notes", default=None)


def note(values: Mapping[str, Value | None]) -> None:
    """Adds ``values`` (``None`` ones left out) to the record being handled, if a scope is open."""
    notes = _notes.get()
    if notes is not None:
        notes.update({key: value for key, value in values.items() if value is not None})


@contextmanager
def collecting() -> Iterator[dict[str, Value]]:
    notes: dict[str, Value] = {}
    token = _notes.set(notes)
    try:
        yield notes
    finally:
        _notes.reset(token)
