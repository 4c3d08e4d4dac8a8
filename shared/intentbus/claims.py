"""Claim check: a fact too large for its PutEvents entry travels with its payload in a bucket.

Publishing (``ClaimCheckingBus``): a fact whose entry would be over the threshold is published with
``payload = {"claim_check": {"key", "sha256", "bytes"}}``; the payload itself, as canonical JSON, is
stored under a key made of the tenant and its sha256, so publishing the same fact again (a redelivery)
writes the same object. The run's log records the fact whole, so rule 1 republishes exactly it.

Reading (``check_out``): a stage reading a claim-checked fact fetches the object and compares its
sha256 with the one the fact carries; a missing object or one that does not match is malformed input:
quarantined with the reason, never run. Only facts the pipeline published are resolved this way;
a producer's payload is never read as a reference.
"""

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from intentbus.envelope import Envelope
from intentbus.errors import IntentbusError, MalformedInput
from intentbus.ids import canonical_json
from intentbus.limits import PUT_EVENTS_LIMIT_BYTES, TIME_BYTES
from intentbus.ports import Bus

if TYPE_CHECKING:
    from intentbus.claim_reference import ClaimReference

CLAIM_FIELD = "claim_check"
"""The only key of a claim-checked envelope's payload."""


class ClaimStore(Protocol):
    """Where claim-checked payloads are kept (an S3 bucket; a dict in tests)."""

    def put(self, key: str, body: bytes) -> None: ...

    def get(self, key: str) -> bytes | None:
        """The object's bytes, or ``None`` when there is no such object (expired, deleted)."""
        ...


class OversizedFact(IntentbusError):
    """A fact that would not fit a PutEvents entry even with its payload claim-checked."""

    code = "oversized_fact"


def detail_json(envelope: Envelope) -> str:
    """The entry's ``Detail`` as ``intentbus.adapters.eventbridge_bus`` sends it."""
    return envelope.json_text


def published_size(envelope: Envelope) -> int:
    """The envelope's PutEvents entry size as EventBridge counts it (``intentbus.limits.entry_size``)."""
    return (
        TIME_BYTES
        + len(envelope.source.encode())
        + len(envelope.type.encode())
        + len(detail_json(envelope).encode())
    )


def claim_key(tenant_id: str, sha256: str) -> str:
    return f"{tenant_id}/{sha256}"


def reference_of(envelope: Envelope) -> "ClaimReference | None":
    """The claim check an envelope carries instead of its payload, if it does."""
    payload = envelope.payload
    if len(payload) != 1 or CLAIM_FIELD not in payload:  # its only key: no set made of every read's keys
        return None
    from intentbus.claim_reference import ClaimReference

    try:
        return ClaimReference.model_validate(envelope.payload[CLAIM_FIELD])
    except ValidationError:
        return None


def check_in(envelope: Envelope, store: ClaimStore) -> Envelope:
    """The envelope with its payload stored and replaced by a reference to it."""
    from intentbus.claim_reference import ClaimReference

    body = canonical_json(envelope.payload).encode()
    sha256 = hashlib.sha256(body).hexdigest()
    reference = ClaimReference(key=claim_key(envelope.tenant_id, sha256), sha256=sha256, bytes=len(body))
    store.put(reference.key, body)
    return envelope.model_copy(update={"payload": {CLAIM_FIELD: reference.model_dump()}})


def check_out(envelope: Envelope, store: ClaimStore | None) -> Envelope:
    """The envelope with a claim-checked payload fetched and verified; any other envelope as it is."""
    reference = reference_of(envelope)
    if reference is None:
        return envelope
    where = f"claim-checked payload {reference.key}"
    if store is None:
        raise MalformedInput(f"{where}: this deployment has no claim-check bucket", field="detail.payload")
    body = store.get(reference.key)
    if body is None:
        raise MalformedInput(f"{where} is missing (expired or deleted)", field="detail.payload")
    found = hashlib.sha256(body).hexdigest()
    if found != reference.sha256 or len(body) != reference.bytes:
        raise MalformedInput(
            f"{where} does not match its digest (sha256 {found}, {len(body)} bytes; the fact says "
            f"{reference.sha256}, {reference.bytes} bytes): it changed after it was published",
            field="detail.payload",
        )
    try:
        payload = json.loads(body)
    except ValueError:
        raise MalformedInput(f"{where} is not JSON", field="detail.payload") from None
    if not isinstance(payload, dict):
        raise MalformedInput(f"{where} is not a JSON object", field="detail.payload")
    return envelope.model_copy(update={"payload": payload})


def fit(envelope: Envelope, store: ClaimStore | None, threshold: int) -> Envelope:
    """The envelope as it can be published: claim-checked when its entry would pass ``threshold``.

    Raises ``OversizedFact`` rather than publish an entry PutEvents would refuse."""
    size = published_size(envelope)
    if size <= threshold or reference_of(envelope) is not None or store is None:
        fitted = envelope
    else:
        fitted = check_in(envelope, store)
        size = published_size(fitted)
    if size > PUT_EVENTS_LIMIT_BYTES:
        raise OversizedFact(
            f"{envelope.type} {envelope.id} would be a {size:,}-byte PutEvents entry, over the "
            f"{PUT_EVENTS_LIMIT_BYTES:,} AWS accepts"
            + ("" if store is not None else ", and no claim-check bucket is configured")
        )
    return fitted


class ClaimCheckingBus:
    """A ``Bus`` that publishes each fact as ``fit`` makes it."""

    def __init__(self, inner: Bus, store: ClaimStore | None, threshold: int) -> None:
        self.inner = inner
        self.store = store
        self.threshold = threshold

    def publish(self, envelopes: Sequence[Envelope]) -> None:
        self.inner.publish([fit(envelope, self.store, self.threshold) for envelope in envelopes])


class InMemoryClaims:
    """A ``ClaimStore`` in a dict (``intentbus.testing``); ``objects`` may be changed to play an attack."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def put(self, key: str, body: bytes) -> None:
        self.objects[key] = body

    def get(self, key: str) -> bytes | None:
        return self.objects.get(key)


def resolved_detail(detail: dict[str, Any], store: ClaimStore | None) -> dict[str, Any]:
    """A pipeline-published detail (an envelope's JSON) with its claim-checked payload resolved."""
    payload = detail["payload"] if "payload" in detail else detail.get("data")  # as the envelope reads it
    if not isinstance(payload, dict) or set(payload) != {CLAIM_FIELD}:
        return detail  # no claim check: not worth reading the envelope for
    try:
        envelope = Envelope.model_validate(detail)
    except ValidationError:
        return detail  # told by the reader's own validation
    if reference_of(envelope) is None:
        return detail
    return {**detail, "payload": check_out(envelope, store).payload}


def __getattr__(name: str) -> Any:
    """``ClaimReference`` lives in ``intentbus.claim_reference`` (only a claim-checked payload creates the
    class); imported from here, it loads there."""
    if name == "ClaimReference":
        from intentbus.claim_reference import ClaimReference

        return ClaimReference
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
