"""Message sizes on the whole topology, with the local cloud holding PutEvents and SQS to AWS's limits.

Every PutEvents entry the pipeline makes is measured as AWS counts it (``intentbus.limits.entry_size``)
by wrapping the local cloud's EventBridge; the test workflow (tests/large_workflow.py) copies a
producer's text into every fact.

The attacks: a producer sending oversized fields (a 200 KB ``subject``; a payload at or past the hard
maximum) so that a fact the pipeline publishes would be refused and its run stranded in a DLQ; someone
with write access to the claim-check bucket swapping a fact's payload between publish and read.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.limits import (
    DEFAULT_CLAIM_CHECK_BYTES,
    MAX_PAYLOAD_BYTES,
    MAX_SUBJECT_CHARS,
    PUT_EVENTS_LIMIT_BYTES,
    entry_size,
    json_bytes,
)
from intentbus.state import Status
from intentbus_local.cloud import LocalCloud
from tests import large_workflow

TENANT = "acme"
KB = 1024


@pytest.fixture
def sizes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, int]]:
    """(source, detail-type, entry size) of every PutEvents entry the local cloud accepted."""
    from intentbus_local import moto_fixes

    moto_fixes.apply()
    from moto.events.models import EventsBackend

    seen: list[tuple[str, str, int]] = []
    accepting = EventsBackend.put_events

    def measured(self: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = accepting(self, events)
        seen.extend((e.get("Source", ""), e.get("DetailType", ""), entry_size(e)) for e in events)
        return results

    monkeypatch.setattr(EventsBackend, "put_events", measured)
    return seen


@pytest.fixture
def cloud(tmp_path: Path, sizes: list[tuple[str, str, int]]) -> Iterator[LocalCloud]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    parameters = {"Workflows": large_workflow.WORKFLOWS}
    with LocalCloud(mode="server", logs_dir=tmp_path / "logs", parameters=parameters) as running:
        yield running


def bucket(cloud: LocalCloud) -> str:
    return cloud.topology.functions["ValidateFunction"].environment["INTENTBUS_CLAIM_BUCKET"]


def claim_keys(cloud: LocalCloud) -> list[str]:
    listed = cloud.clients("s3").list_objects_v2(Bucket=bucket(cloud))
    return [item["Key"] for item in listed.get("Contents", [])]


def emit(cloud: LocalCloud, note_id: str, text: str, **fields: Any) -> None:
    payload = {"note_id": note_id, "text": text, **fields.pop("payload", {})}
    envelope = {"id": f"evt-{note_id}", "tenant_id": TENANT, "run_id": f"run-{note_id}", "payload": payload}
    detail = json.dumps({**envelope, "type": large_workflow.FILED, **fields})
    cloud.put_events([{"Source": "tests.example", "DetailType": large_workflow.FILED, "Detail": detail}])


def quarantine_reasons(cloud: LocalCloud) -> list[str]:
    return [str(m.json()["reason"]) for m in cloud.queue_messages("QuarantineQueue")]


def pipeline_sizes(sizes: list[tuple[str, str, int]]) -> list[int]:
    return [size for source, _, size in sizes if source.startswith("intentbus.")]


def state(cloud: LocalCloud, note_id: str) -> Status | None:
    store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
    found = store.state(TENANT, f"run-{note_id}")
    return None if found is None else found.status


def test_a_200_kb_subject_is_quarantined_at_validate_and_no_fact_is_published(
    cloud: LocalCloud, sizes: list[tuple[str, str, int]]
) -> None:
    # Quarantined rather than cut: a subject names what the event is about, so a cut one would name
    # something else, and the producer is told which field to fix.
    emit(cloud, "subject", "hello", subject="s" * 200 * KB)
    assert cloud.run_until_idle(max_invocations=50).idle

    (reason,) = quarantine_reasons(cloud)
    assert f"subject: String should have at most {MAX_SUBJECT_CHARS} characters" in reason
    assert pipeline_sizes(sizes) == [], "nothing entered the pipeline"
    assert state(cloud, "subject") is None
    assert all(cloud.queue_depth(dlq.logical_id) == (0, 0, 0) for dlq in cloud.topology.dlqs.values())


def test_an_input_past_the_hard_maximum_is_quarantined_at_validate_never_a_dlq(
    cloud: LocalCloud, sizes: list[tuple[str, str, int]]
) -> None:
    """An entry PutEvents accepts (just under 256 KB) whose facts would each carry it past 256 KB."""
    text = "t" * (PUT_EVENTS_LIMIT_BYTES - 2 * KB)
    emit(cloud, "huge", text)
    (_, _, sent) = sizes[-1]
    assert MAX_PAYLOAD_BYTES < sent <= PUT_EVENTS_LIMIT_BYTES
    assert cloud.run_until_idle(max_invocations=50).idle

    (reason,) = quarantine_reasons(cloud)
    assert f"over the {MAX_PAYLOAD_BYTES:,} a payload may have" in reason
    assert pipeline_sizes(sizes) == []
    assert all(cloud.queue_depth(dlq.logical_id) == (0, 0, 0) for dlq in cloud.topology.dlqs.values())


def test_an_input_at_the_limit_completes_by_claim_check_with_every_entry_under_the_threshold(
    cloud: LocalCloud, sizes: list[tuple[str, str, int]]
) -> None:
    """The largest input the pipeline takes, with the largest rationale and evidence an agent may give:
    before, such an input grew past 256 KB in its first fact. The largest entry is measured here."""
    fixed = json_bytes({"note_id": "max", "text": "", "echo": False, "loud": True, "pad_rationale": 0})
    emit(
        cloud,
        "max",
        "t" * (MAX_PAYLOAD_BYTES - fixed),
        subject="s" * MAX_SUBJECT_CHARS,
        payload={"loud": True},
    )
    assert cloud.run_until_idle(max_invocations=50).idle

    assert quarantine_reasons(cloud) == []
    assert state(cloud, "max") is Status.COMPLETED
    published = pipeline_sizes(sizes)
    assert len(published) >= 6  # accepted, proposed, authorized, executed, stored (+ its acceptance), done
    assert max(published) <= DEFAULT_CLAIM_CHECK_BYTES
    print(f"largest PutEvents entry over the run: {max(published):,} bytes; entries: {sorted(published)}")
    keys = claim_keys(cloud)
    assert keys
    assert all(key.startswith(f"{TENANT}/") for key in keys)


def test_a_payload_over_the_threshold_completes_with_its_object_in_the_bucket(
    cloud: LocalCloud, sizes: list[tuple[str, str, int]]
) -> None:
    emit(cloud, "big", "t" * 100 * KB)
    assert cloud.run_until_idle(max_invocations=50).idle

    assert state(cloud, "big") is Status.COMPLETED
    assert max(pipeline_sizes(sizes)) <= DEFAULT_CLAIM_CHECK_BYTES
    s3 = cloud.clients("s3")
    stored = [
        json.loads(s3.get_object(Bucket=bucket(cloud), Key=key)["Body"].read()) for key in claim_keys(cloud)
    ]
    accepted = [payload for payload in stored if "event" in payload]
    assert accepted[0]["event"]["payload"]["text"] == "t" * 100 * KB


def test_a_swapped_object_is_quarantined_by_the_stage_that_reads_it(cloud: LocalCloud) -> None:
    emit(cloud, "swap", "t" * 100 * KB)
    cloud.run_until_idle(max_invocations=20, hold=("DecideFunction",))
    (key,) = claim_keys(cloud)
    s3 = cloud.clients("s3")
    accepted = json.loads(s3.get_object(Bucket=bucket(cloud), Key=key)["Body"].read())
    # The attack: someone who may write to the bucket swaps the accepted event's text.
    accepted["event"]["payload"]["text"] = "written by someone else"
    s3.put_object(Bucket=bucket(cloud), Key=key, Body=json.dumps(accepted).encode())

    assert cloud.run_until_idle(max_invocations=20).idle

    (reason,) = quarantine_reasons(cloud)
    assert f"claim-checked payload {key} does not match its digest" in reason
    assert state(cloud, "swap") is None, "decide never ran the agent on the swapped event"
    assert all(cloud.queue_depth(dlq.logical_id) == (0, 0, 0) for dlq in cloud.topology.dlqs.values())


def test_the_largest_entry_over_inputs_around_the_threshold_is_at_most_the_threshold(
    cloud: LocalCloud, sizes: list[tuple[str, str, int]]
) -> None:
    """Facts just under the threshold are published whole, just over it by claim check: the largest
    entry the pipeline publishes is the threshold's size (what the sweep measures), whatever the input."""
    around = [DEFAULT_CLAIM_CHECK_BYTES - delta for delta in (4000, 2500, 2000, 1500, 1000, 500, 0)]
    for index, chars in enumerate(around):
        emit(cloud, f"sweep-{index}", "t" * chars)
    assert cloud.run_until_idle(max_invocations=200).idle

    assert quarantine_reasons(cloud) == []
    assert all(state(cloud, f"sweep-{index}") is Status.COMPLETED for index in range(len(around)))
    published = pipeline_sizes(sizes)
    assert max(published) <= DEFAULT_CLAIM_CHECK_BYTES
    print(f"largest PutEvents entry around the threshold: {max(published):,} bytes")
