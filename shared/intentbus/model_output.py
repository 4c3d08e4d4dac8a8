"""A model's raw output, kept apart: its text for the quarantine, its size and hash for everything else.

A model's answer is untrusted text: it can echo a card number from the event, or anything else. Logs,
traces and quarantine reasons carry it only as ``RawOutput.summary()`` (size and sha256); the text is
kept in one place, the quarantined message's ``raw_output`` field, for a person to read on request
(``intentbus quarantine show ID --raw-output``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RawOutput:
    """A model's output kept as it came, for the quarantine of a rejected decision."""

    text: str
    """The output as JSON: keys sorted, no spaces, ASCII only (``\\u`` escapes), so its bytes are the same
    wherever it is written; the quarantine's ``raw_output`` holds exactly this string."""

    @classmethod
    def of(cls, value: Any) -> RawOutput:
        # ASCII keeps a lone surrogate a model may emit writable (SQS and UTF-8 refuse it raw).
        return cls(json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"), default=str))

    @property
    def size(self) -> int:
        """Bytes of ``text`` (ASCII: one per character)."""
        return len(self.text)

    @property
    def sha256(self) -> str:
        """Hex sha256 of ``text``'s bytes: ``sha256(raw_output.encode())`` of the quarantined message."""
        return hashlib.sha256(self.text.encode("ascii")).hexdigest()

    def summary(self) -> str:
        return f"{self.size} bytes, sha256 {self.sha256}"

    def log_fields(self) -> dict[str, int | str]:
        """What a log line or a trace may carry of the output."""
        return {"raw_output_bytes": self.size, "raw_output_sha256": self.sha256}
