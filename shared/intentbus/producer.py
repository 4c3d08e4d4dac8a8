"""The producer client: publish envelopes to the intentbus ingress bus, as another system would.

    from intentbus.catalog import Catalog
    from intentbus.producer import Producer

    producer = Producer(boto3.client("events"), "intentbus-ingress-intentbus",
                        source="monitoring.example", types=Catalog.from_modules(WORKFLOWS).types)
    report = producer.send([{"tenant_id": "acme", "type": "ServiceLatencyIncreased", "payload": {...}}])
    for refused in report.refused:
        print(refused.index, refused.reason)

``send`` checks every envelope first, the way validate will see it: the type present and a JSON object
always; with a ``TypeRegistry``, also the type known to the registry, the envelope's fields and the
payload against the type's pydantic model (``intentbus.inbound``, the very code validate runs). An
envelope that fails is refused here, with the reason naming the field, and never sent. The others
are packed into PutEvents requests within EventBridge's limits (10 entries, 256 KB counted as
``entry_size`` does), and entries EventBridge fails are retried with the seed's backoff
(``intentbus.backoff``) until ``max_attempts``; what still fails is refused with EventBridge's
``ErrorCode``. Nothing is dropped silently: every index is in ``accepted`` or ``refused``, unless
PutEvents itself fails (an unknown bus, no permission), which raises ``SendError`` with what was
accepted before it.

Every entry's ``Source`` is the producer's ``source``: a producer's IAM policy pins it (an
``events:source`` condition), so an envelope claiming another ``source`` is refused.

No AWS client is created here: pass one in.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from intentbus.backoff import backoff_seconds
from intentbus.envelope import Envelope
from intentbus.errors import MalformedInput, PublishError
from intentbus.facts import PIPELINE_SOURCE, WORKFLOW_SOURCE
from intentbus.inbound import normalize, parse_bus_event
from intentbus.limits import entry_size
from intentbus.registry import TypeRegistry

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_events.type_defs import PutEventsRequestEntryTypeDef

MAX_ENTRIES_PER_REQUEST = 10
"""PutEvents takes at most ten entries per request."""
MAX_REQUEST_BYTES = 256 * 1024
"""PutEvents takes at most 256 KB per request, the entries' sizes summed as ``entry_size`` counts."""
"""What an entry's ``Time`` counts, whatever its value."""
RESERVED_SOURCES = (PIPELINE_SOURCE, WORKFLOW_SOURCE)
"""Sources only the pipeline speaks as; ``aws.`` sources are AWS's own."""


@dataclass(frozen=True)
class Accepted:
    """An envelope EventBridge accepted: its index in what was sent, and EventBridge's event id."""

    index: int
    event_id: str


@dataclass(frozen=True)
class Refused:
    """An envelope that was not accepted, and why.

    ``error_code`` is EventBridge's ``ErrorCode`` when EventBridge refused it after the retries ran
    out; ``None`` when it was refused here, before sending (then ``field`` names the offending field
    when there is one)."""

    index: int
    reason: str
    error_code: str | None = None
    field: str | None = None

    @property
    def sent(self) -> bool:
        """True when EventBridge refused it; False when it never left this process."""
        return self.error_code is not None


@dataclass(frozen=True)
class SendReport:
    """What ``Producer.send`` did with each envelope, by its index (0-based) in the input."""

    accepted: tuple[Accepted, ...] = ()
    refused: tuple[Refused, ...] = ()
    requests: int = 0
    """PutEvents calls made, retries included."""

    @property
    def ok(self) -> bool:
        return not self.refused

    @property
    def event_ids(self) -> dict[int, str]:
        """Index -> EventBridge event id, for every accepted envelope."""
        return {item.index: item.event_id for item in self.accepted}


class SendError(PublishError):
    """PutEvents itself failed (an unknown bus, no permission, no credentials, no network).

    ``report`` holds what was accepted or refused before it; ``unsent`` the indexes of the envelopes
    neither accepted nor refused (the failed request's and every later one's)."""

    code: ClassVar[str] = "send"

    def __init__(self, message: str, *, report: SendReport, unsent: tuple[int, ...]) -> None:
        super().__init__(message)
        self.report = report
        self.unsent = unsent


@dataclass
class _Pending:
    """A checked envelope's PutEvents entry, its index in the send and its size."""

    index: int
    entry: PutEventsRequestEntryTypeDef
    size: int


@dataclass
class _Outcome:
    """What one send has accepted and refused so far, and how many requests it made."""

    accepted: list[Accepted] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    requests: int = 0

    def report(self) -> SendReport:
        return SendReport(
            accepted=tuple(sorted(self.accepted, key=lambda item: item.index)),
            refused=tuple(sorted(self.refused, key=lambda item: item.index)),
            requests=self.requests,
        )


class Producer:
    """Publishes envelopes to one bus (the stack's ``IngressBusName``) as one ``source``.

    ``types`` (e.g. ``Catalog.from_modules(...).types``) validates each envelope as validate will;
    ``None`` runs only the structural checks. ``sleep`` and ``rng`` are the backoff's clock and
    jitter (``rng()`` in [0, 1)); the n-th retry of a request waits
    ``min(cap_seconds, base_seconds * 2**(n-1)) + rng() * base_seconds``.
    """

    def __init__(
        self,
        client: EventBridgeClient,
        bus_name: str,
        *,
        source: str,
        types: TypeRegistry | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        max_attempts: int = 5,
        base_seconds: float = 0.05,
        cap_seconds: float = 2.0,
    ) -> None:
        if not bus_name:
            raise ValueError("no bus: pass the stack's IngressBusName output")
        if not source:
            raise ValueError("a producer needs a source (the one its IAM policy pins)")
        if source in RESERVED_SOURCES or source.startswith("aws."):
            raise ValueError(f"source {source!r} is reserved (the pipeline's or AWS's own)")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._client = client
        self.bus_name = bus_name
        self.source = source
        self._types = types
        self._sleep = sleep
        self._rng = rng
        self._max_attempts = max_attempts
        self._base = base_seconds
        self._cap = cap_seconds

    def send(self, envelopes: Iterable[Mapping[str, Any] | Envelope]) -> SendReport:
        """Check, pack and put every envelope; see the module's docstring."""
        outcome = _Outcome()
        ready: list[_Pending] = []
        for index, envelope in enumerate(envelopes):
            try:
                entry = self.entry(envelope)
            except MalformedInput as error:
                outcome.refused.append(Refused(index, error.reason, field=error.field))
                continue
            ready.append(_Pending(index, entry, entry_size(entry)))
        batches = _pack(ready)
        for number, batch in enumerate(batches):
            try:
                self._put(batch, outcome)
            except (ClientError, BotoCoreError) as error:
                done = {item.index for item in outcome.accepted} | {item.index for item in outcome.refused}
                unsent = tuple(
                    item.index for later in batches[number:] for item in later if item.index not in done
                )
                accepted = len(outcome.accepted)
                raise SendError(
                    f"PutEvents to {self.bus_name!r} failed: {error} ({accepted} accepted before it)",
                    report=outcome.report(),
                    unsent=unsent,
                ) from error
        return outcome.report()

    def entry(self, envelope: Mapping[str, Any] | Envelope) -> PutEventsRequestEntryTypeDef:
        """The PutEvents entry for ``envelope``, or ``MalformedInput`` saying why it may not be sent."""
        detail = self._detail(envelope)
        type_name = _type_name(detail)
        claimed = detail.get("source", self.source)
        if claimed != self.source:
            raise MalformedInput(
                f"the envelope's source {claimed!r} is not this producer's source {self.source!r}: a "
                "producer sends only as the source its IAM policy pins",
                field="source",
            )
        try:
            text = json.dumps(detail, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
            text.encode()
        except RecursionError:
            raise MalformedInput("the envelope is nested too deeply to be JSON") from None
        except UnicodeEncodeError:
            raise MalformedInput("the envelope holds an unpaired surrogate, which is not text") from None
        except (TypeError, ValueError) as error:  # a value JSON cannot hold; NaN or Infinity
            raise MalformedInput(f"the envelope is not JSON: {error}") from None
        entry: PutEventsRequestEntryTypeDef = {
            "EventBusName": self.bus_name,
            "Source": self.source,
            "DetailType": type_name,
            "Detail": text,
        }
        size = entry_size(entry)
        if size > MAX_REQUEST_BYTES:
            raise MalformedInput(
                f"the entry is {size} bytes, over the {MAX_REQUEST_BYTES} bytes (256 KB) PutEvents "
                "takes: send a reference (e.g. an S3 URL) in the payload instead"
            )
        if self._types is not None:
            self._validate(self._types, type_name, text)
        return entry

    def _detail(self, envelope: Mapping[str, Any] | Envelope) -> dict[str, Any]:
        if isinstance(envelope, Envelope):
            return envelope.to_json_dict()
        if not isinstance(envelope, Mapping):
            raise MalformedInput(f"an envelope is a JSON object, not a {type(envelope).__name__}")
        detail = dict(envelope)
        if any(not isinstance(key, str) for key in detail):
            raise MalformedInput("an envelope's keys are strings")
        return detail

    def _validate(self, types: TypeRegistry, type_name: str, detail_text: str) -> None:
        """What validate will make of the event EventBridge delivers: parse it, then normalize it."""
        header = json.dumps(
            {
                "version": "0",
                "id": str(uuid.UUID(int=0)),
                "detail-type": type_name,
                "source": self.source,
                "account": "000000000000",
                "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "region": "us-east-1",
                "resources": [],
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        body = f'{header[:-1]},"detail":{detail_text}}}'
        normalize(parse_bus_event(body), types)

    def _put(self, batch: list[_Pending], outcome: _Outcome) -> None:
        pending = batch
        for attempt in range(self._max_attempts):
            if attempt:
                self._sleep(backoff_seconds(attempt - 1, base=self._base, cap=self._cap, jitter=self._rng))
            outcome.requests += 1
            response = self._client.put_events(Entries=[item.entry for item in pending])
            failed: list[tuple[_Pending, str, str]] = []
            for item, result in zip(pending, response["Entries"], strict=True):
                code = result.get("ErrorCode")
                if code is None:
                    outcome.accepted.append(Accepted(item.index, result.get("EventId", "")))
                else:
                    failed.append((item, code, result.get("ErrorMessage", "")))
            if not failed:
                return
            if attempt == self._max_attempts - 1:
                for item, code, message in failed:
                    reason = f"EventBridge refused it after {self._max_attempts} attempts: {code}: {message}"
                    outcome.refused.append(Refused(item.index, reason, error_code=code))
                return
            pending = [item for item, _, _ in failed]


def _type_name(detail: Mapping[str, Any]) -> str:
    names = {key: detail[key] for key in ("type", "event_type") if key in detail}
    if not names:
        raise MalformedInput("an envelope needs a 'type' (or 'event_type') to route on", field="type")
    if len(set(map(repr, names.values()))) > 1:
        raise MalformedInput("type and event_type disagree: send one", field="type")
    type_name = next(iter(names.values()))
    if not isinstance(type_name, str) or not type_name:
        raise MalformedInput("type must be a non-empty string", field="type")
    return type_name


def _pack(ready: list[_Pending]) -> list[list[_Pending]]:
    """Requests of at most 10 entries and 256 KB, in input order (each entry fits alone)."""
    batches: list[list[_Pending]] = []
    current: list[_Pending] = []
    size = 0
    for item in ready:
        if current and (len(current) == MAX_ENTRIES_PER_REQUEST or size + item.size > MAX_REQUEST_BYTES):
            batches.append(current)
            current, size = [], 0
        current.append(item)
        size += item.size
    if current:
        batches.append(current)
    return batches
