"""The stage bench's replay answers a batch read it did not capture as asked (a cold start's one-record batch)
from the captured read of the batch that held the record, so the record takes the path it took then."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.bench.stage_capture import request_key
from tests.bench.stage_probe import _Fake

TABLE = "WorkflowTable"


def _item(pk: str, sk: str, step: int) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}, "step": {"N": str(step)}}


def _captured(key: str, *items: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"Responses": {TABLE: list(items)}, "UnprocessedKeys": {}}).encode()
    return {
        "operation": "BatchGetItem",
        "key": key,
        "status": 200,
        "headers": {},
        "body": base64.b64encode(body).decode(),
    }


def _ask(fake: _Fake, *keys: tuple[str, str]) -> list[dict[str, Any]]:
    fake.operation = "BatchGetItem"
    request = {"RequestItems": {TABLE: {"Keys": [{"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in keys]}}}
    _, _, body = fake.answer(json.dumps(request).encode())
    answered: list[dict[str, Any]] = json.loads(body)["Responses"][TABLE]
    return answered


def test_a_record_is_answered_from_its_own_batchs_read_not_a_later_one() -> None:
    # The first batch found run A's own entry but not its state (a new run); a later batch found its state
    # at step 1. Answering A's first record with that later state would make it stale.
    fake = _Fake(
        [
            _captured("first", _item("A", "ENTRY#decide", 0), _item("B", "STATE", 3)),
            _captured("later", _item("A", "STATE", 1), _item("A", "ENTRY#decide", 0)),
        ]
    )
    answered = _ask(fake, ("A", "STATE"), ("A", "ENTRY#decide"))
    assert answered == [_item("A", "ENTRY#decide", 0)]


def test_only_the_asked_keys_are_answered() -> None:
    fake = _Fake([_captured("first", _item("A", "STATE", 2), _item("B", "STATE", 3))])
    assert _ask(fake, ("B", "STATE")) == [_item("B", "STATE", 3)]
    assert _ask(fake, ("C", "STATE")) == []


def test_a_read_captured_as_asked_is_answered_as_captured() -> None:
    request = {"RequestItems": {TABLE: {"Keys": [{"pk": {"S": "A"}, "sk": {"S": "STATE"}}]}}}
    raw = json.dumps(request).encode()

    fake = _Fake([_captured(request_key(raw), _item("A", "STATE", 7), _item("B", "STATE", 3))])
    fake.operation = "BatchGetItem"
    _, _, body = fake.answer(raw)
    assert len(json.loads(body)["Responses"][TABLE]) == 2
