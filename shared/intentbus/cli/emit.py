"""``intentbus emit``: put envelopes on a bus, as any other system would."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from intentbus.errors import PublishError

MAX_ENTRIES_PER_CALL = 10


class InputError(ValueError):
    pass


def read_envelopes(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """JSON lines, or one JSON document (an object or an array of objects)."""
    text = path.read_text()
    stripped = text.lstrip()
    if stripped.startswith("["):
        documents = json.loads(text)
        yield from enumerate(documents, start=1)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}:{number}: not JSON ({error.msg})") from None
        if not isinstance(value, dict):
            raise InputError(f"{path}:{number}: expected a JSON object")
        yield number, value


def to_entry(envelope: dict[str, Any], *, bus_name: str, default_source: str) -> dict[str, Any]:
    type_name = envelope.get("type", envelope.get("event_type"))
    if not isinstance(type_name, str) or not type_name:
        raise InputError("an envelope needs a 'type' (or 'event_type') to route on")
    return {
        "Source": str(envelope.get("source", default_source)),
        "DetailType": type_name,
        "Detail": json.dumps(envelope),
        "EventBusName": bus_name,
    }


def put_all(client: Any, entries: Iterable[dict[str, Any]]) -> list[str]:
    """PutEvents in batches of ten; any entry EventBridge refuses is an error, not a silent drop."""
    ids: list[str] = []
    batch: list[dict[str, Any]] = []
    for entry in [*entries, None]:
        if entry is not None:
            batch.append(entry)
        if batch and (entry is None or len(batch) == MAX_ENTRIES_PER_CALL):
            response = client.put_events(Entries=batch)
            if response.get("FailedEntryCount"):
                failed = [r for r in response["Entries"] if "ErrorCode" in r]
                raise PublishError(
                    f"{len(failed)} of {len(batch)} entries refused: {failed[0].get('ErrorMessage')}"
                )
            ids.extend(result["EventId"] for result in response["Entries"])
            batch = []
    return ids
