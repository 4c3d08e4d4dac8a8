"""A proof entry as the store holds it (its JSON), read into a ``LogEntry`` only when its text cannot tell.

A stage checks a fact against its producer's entry (rule 8): was it among the outputs recorded? The
entry's JSON is what ``log_entry_json`` wrote: ``{"stage":..,"input_id":..,...,"outputs":[..]}``, the
outputs last, each an envelope's JSON with its trace context just before ``extensions``, the last field.
When the fact's content text (its JSON less the trace context) is the entry's last output's, spliced
around the trace pair it recorded, the fact is that output: the same text is the same content. Any other
text (another output, other key order, a damaged entry) is read as before, whole (~105 k instructions to
validate, ~85 k to compare the values).
"""

import re
from collections.abc import Callable
from functools import cache, cached_property
from json.encoder import encode_basestring

from intentbus.journal import LogEntry
from intentbus.model_shortcuts import validated_json

_STRING_OR_NULL = r'(?:null|"(?:[^"\\]|\\.)*")'


@cache
def _trace_pair() -> re.Pattern[str]:
    """The trace context's two members as an envelope's JSON has them, ending where the match must end.
    Compiled when first needed: a stage that checks no proof (execute) does not compile it at its cold
    start (~1.5 M instructions)."""
    return re.compile(rf',"traceparent":{_STRING_OR_NULL},"tracestate":{_STRING_OR_NULL}\Z')


_EXTENSIONS = ',"extensions":{'
"""The last member's start: its values are flat (intentbus.extensions), so no ``{`` follows this inside it."""


class StoredEntry:
    """One stage's entry for one input, as read: its JSON (``read_text``, read when first asked for) and
    the ``LogEntry`` it holds, validated only when first asked for."""

    def __init__(self, stage: str, input_id: str, read_text: Callable[[], str]) -> None:
        self.stage = stage
        self.input_id = input_id
        self._read_text = read_text

    def __eq__(self, other: object) -> bool:
        """The same stage's entry for the same input, with the same text (two reads of one item)."""
        if not isinstance(other, StoredEntry):
            return NotImplemented
        return (self.stage, self.input_id, self.text) == (other.stage, other.input_id, other.text)

    def __hash__(self) -> int:
        return hash((self.stage, self.input_id, self.text))

    def __repr__(self) -> str:
        return f"StoredEntry({self.stage!r}, {self.input_id!r})"

    @cached_property
    def text(self) -> str:
        return self._read_text()

    @cached_property
    def entry(self) -> LogEntry | None:
        """The entry validated whole (raising as a damaged entry always did); ``None`` if it is another
        stage's or input's (stored under this key, it proves nothing here)."""
        entry = validated_json(LogEntry, self.text)
        if entry.stage != self.stage or entry.input_id != self.input_id:
            return None
        return entry

    def last_output_is(self, content: str) -> bool:
        """Whether the entry's last output is, less its trace context, ``content`` (a fact's JSON less its
        trace context, as ``json_text_of`` writes it). ``False`` says nothing: the whole entry tells.

        Exact for JSON as ``log_entry_json`` writes it: the text ends with the outputs' closing ``]}``, so
        an object that ends right there is the outputs' last; its start is where its length says, and
        the entry's first two members are this stage's and input's."""
        text = self.text
        cut = content.rfind(_EXTENSIONS)
        if cut < 0 or not text.endswith("]}"):
            return False
        head, tail = content[:cut], content[cut:]
        tail_at = len(text) - 2 - len(tail)
        if not text.startswith(tail, tail_at):
            return False
        trace = _trace_pair().search(text, 0, tail_at)
        if trace is None:
            return False
        start = trace.start() - len(head)
        return (
            start > 0
            and text[start - 1] in "[,"
            and text.startswith(head, start)
            and text.startswith(_members(self.stage, self.input_id))
        )


def _members(stage: str, input_id: str) -> str:
    """How the entry's JSON starts: its stage and input id (strings the encoder writes as pydantic does;
    one it writes otherwise only sends the entry to be read whole)."""
    return f'{{"stage":{encode_basestring(stage)},"input_id":{encode_basestring(input_id)},'
