"""Proof entries read from the table (moto) and checked by their text first (``StoredEntry``): a fact
is believed only for what its producer's entry says it published, and a damaged entry fails the read
as it did when every proof was validated whole.

The attacks: a producer (or anyone who can send to the bus) may send any fact it likes, with the id of
one that was recorded; the table is written only by the pipeline, so a damaged entry is a fault, never
an attack, and fails the delivery (it is retried) rather than pass a fact."""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from pydantic import ValidationError

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore, entry_item
from intentbus.envelope import Envelope
from intentbus.errors import NotRecorded
from intentbus.journal import Commit, CommitStatus, LogEntry, Snapshot, log_entry_json
from intentbus.stages.common import require_recorded
from intentbus.stored_entry import StoredEntry
from tests.integration.conftest_moto import aws, client, create_workflow_table  # noqa: F401
from tests.integration.test_adapters import RUN, TENANT, envelope, log_entry

PRODUCER = ("decide", "accepted-1")
STAMPED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def outputs() -> tuple[Envelope, ...]:
    nested = envelope("evt-original", payload={"service": "api", "p99_ms": 1240.0})
    return (
        envelope("out-1", payload={"event": nested.to_json_dict(), "n": 1}),
        envelope("out-2", payload={"command": {"service": "api", "window": 15}, "n": 2}),
    )


@pytest.fixture
def table(aws: None) -> tuple[DynamoWorkflowStore, Any, str]:  # noqa: F811
    dynamodb = client("dynamodb")
    name = create_workflow_table(dynamodb)
    store = DynamoWorkflowStore(name, dynamodb)
    entry = log_entry(*PRODUCER, outputs=outputs())
    result = store.commit(Commit(entry=entry, tenant_id=TENANT, run_id=RUN, expected_version=None))
    assert result.status is CommitStatus.COMMITTED
    return store, dynamodb, name


def check(store: DynamoWorkflowStore, fact: Envelope) -> Snapshot:
    snapshot = store.snapshot(TENANT, RUN, "authorize", fact.id, proofs=[PRODUCER])
    require_recorded(snapshot, fact, [PRODUCER])
    return snapshot


def as_published(fact: Envelope) -> Envelope:
    """The fact as the bus delivers it: the publisher stamps its trace context on (intentbus.spans)."""
    return Envelope.model_validate_json(fact.model_copy(update={"traceparent": STAMPED}).json_text)


def test_each_recorded_output_passes_as_published(table: tuple[DynamoWorkflowStore, Any, str]) -> None:
    store = table[0]
    last = check(store, as_published(outputs()[1]))
    check(store, as_published(outputs()[0]))

    proof = last.proof(*PRODUCER)
    assert isinstance(proof, StoredEntry)
    assert "entry" not in proof.__dict__  # the last output's text told: the entry was never validated


@pytest.mark.parametrize(
    "forged",
    [
        # the recorded id with other content: before and after, refused (NotRecorded: quarantined)
        outputs()[1].model_copy(update={"payload": {"command": {"service": "db", "window": 15}, "n": 2}}),
        outputs()[0].model_copy(update={"payload": {**outputs()[0].payload, "n": 2}}),
        # a number of another type is another content (1.0 is not 1 in the digest)
        outputs()[1].model_copy(update={"payload": {"command": {"service": "api", "window": 15}, "n": 2.0}}),
        outputs()[1].model_copy(update={"step_index": 2}),
        # an envelope the entry holds only inside an output's payload was never published
        Envelope.model_validate(outputs()[0].payload["event"]),
    ],
    ids=["other-payload-last", "other-payload-first", "float-for-int", "other-step", "nested-envelope"],
)
def test_a_forged_fact_with_a_recorded_id_is_refused(
    table: tuple[DynamoWorkflowStore, Any, str], forged: Envelope
) -> None:
    with pytest.raises(NotRecorded):
        check(table[0], as_published(forged))


def put_entry_text(table: tuple[DynamoWorkflowStore, Any, str], text: str) -> None:
    """The proof's item with ``text`` as its entry: a damaged item (the pipeline never writes one)."""
    _, dynamodb, name = table
    item = entry_item(TENANT, RUN, log_entry(*PRODUCER, outputs=outputs()))
    item["entry_z"] = {"B": zlib.compress(text.encode())}
    dynamodb.put_item(TableName=name, Item=item)


def recorded_text() -> str:
    return log_entry_json(log_entry(*PRODUCER, outputs=outputs()))


@pytest.mark.parametrize(
    "damaged",
    [
        "not json at all" + recorded_text()[-40:],
        recorded_text().replace('"source":"test.publisher",', "", 2),  # an output missing a field
        recorded_text().replace('"step_index":1,', '"step_index":"one",'),  # an output's field mistyped
        recorded_text().replace('"outcome":"applied"', '"outcome":"unheard-of"'),  # the entry's own field
    ],
    ids=["garbage", "missing-field", "mistyped-field", "mistyped-entry-field"],
)
def test_a_damaged_proof_entry_fails_the_read_and_passes_no_fact(
    table: tuple[DynamoWorkflowStore, Any, str], damaged: str
) -> None:
    """Before: the read validated every proof and raised ValidationError (the delivery failed and was
    retried). After: the text tells only if the last output is the fact's exactly; these do not, so the
    entry is validated and the same error raised (a garbage text raises it too, not a JSON error)."""
    assert damaged != recorded_text()
    put_entry_text(table, damaged)
    with pytest.raises(ValidationError):
        check(table[0], as_published(outputs()[0]))


def test_a_damaged_entry_whose_last_output_is_intact_still_proves_that_output(
    table: tuple[DynamoWorkflowStore, Any, str],
) -> None:
    """Before: ValidationError (the whole entry was validated). After: the last output's text is the
    fact's, byte for byte, so the fact is what the producer recorded publishing: it passes; nothing
    else the entry says is believed."""
    put_entry_text(table, recorded_text().replace('"outcome":"applied"', '"outcome":"unheard-of"'))
    check(table[0], as_published(outputs()[1]))


def test_another_stages_entry_under_the_producers_key_proves_nothing(
    table: tuple[DynamoWorkflowStore, Any, str],
) -> None:
    """Before: the entry was filed under its own stage and input, so the producer's proof was absent:
    NotRecorded. After: its first members are not the producer's, so it is validated and, being
    another's, proves nothing: NotRecorded, even for a fact that is its own last output."""
    other: LogEntry = log_entry("validate", "accepted-1", outputs=outputs())
    put_entry_text(table, log_entry_json(other))
    for fact in outputs():
        with pytest.raises(NotRecorded):
            check(table[0], as_published(fact))
