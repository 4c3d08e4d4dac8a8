"""Breaking the local cloud on purpose: faults at the AWS-call boundary and in SQS delivery.

Mechanics only, no stage knows about them. Which fault goes where is a ``FaultPlan``'s decision, made
per *site* (``ExecuteFunction:ecs.UpdateService``, ``DecideQueue:lapse``, ...) and per occurrence of
that site from a seeded RNG, so the same seed replays the same schedule.

At a call made inside a function (``CallFaults.intercept``, wired by whoever hooks botocore):

* before the call, which then never happens: ``throttle`` (ThrottlingException,
  ProvisionedThroughputExceededException; TransactionCanceledException with ThrottlingError reasons on
  TransactWriteItems), ``server_error`` (InternalServerError, HTTP 500), ``timeout`` (botocore's
  ReadTimeoutError or ConnectTimeoutError);
* after the call took effect: ``crash_after`` (the invocation dies right there: ``InvocationCrash``),
  ``timeout_after`` (the response is lost: ReadTimeoutError), ``handler_timeout`` (the handler stalls
  past its Timeout, then goes on: its effects happen, the runtime reports it timed out);
* ``partial_put_events``: PutEvents answers some entries with InternalFailure — the real API is called
  with the others only, so the failed ones really were not delivered.

Faults are raised above botocore's own retries: what the caller sees once the SDK has given up.

In delivery (``DeliveryFaults``, the poller's seam): ``duplicate`` (one or two extra copies of a
message sent into its queue), ``reorder`` (a received batch shuffled and split, the later part
invoked first), ``visibility_lapse`` (the batch reaches a second invocation before the first's delete).

Time: a crashed invocation's messages come back after their visibility timeout on the local clock;
the execute stage's in-progress lock follows that clock too (intentbus.adapters.idempotency shifts
Powertools' "now" by the offset the runtime passes to handlers), so it lapses as it would on AWS.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

from intentbus.adapters.clock import CLOCK_OFFSET_ENV
from intentbus_local.clock import LocalClock
from intentbus_local.lambda_runtime import Invocation, InvocationCrash
from intentbus_local.poller import Message
from intentbus_local.topology import FunctionInfo, MappingInfo

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

__all__ = [
    "AFTER_CALL",
    "ALL_KINDS",
    "BEFORE_CALL",
    "CALL_KINDS",
    "CRASH_AFTER",
    "DELIVERY_KINDS",
    "DUPLICATE",
    "HANDLER_TIMEOUT",
    "PARTIAL_PUT_EVENTS",
    "REORDER",
    "SERVER_ERROR",
    "THROTTLE",
    "TIMEOUT",
    "TIMEOUT_AFTER",
    "VISIBILITY_LAPSE",
    "CallFaults",
    "DeliveryFaults",
    "FaultPlan",
    "Injected",
    "InvocationCrash",
    "Proceed",
    "overrun",
    "put_events_with_failures",
    "server_error",
    "throttling_error",
    "timeout_error",
]

THROTTLE = "throttle"
SERVER_ERROR = "server_error"
TIMEOUT = "timeout"
CRASH_AFTER = "crash_after"
TIMEOUT_AFTER = "timeout_after"
HANDLER_TIMEOUT = "handler_timeout"
PARTIAL_PUT_EVENTS = "partial_put_events"
DUPLICATE = "duplicate"
REORDER = "reorder"
VISIBILITY_LAPSE = "visibility_lapse"

BEFORE_CALL = (THROTTLE, SERVER_ERROR, TIMEOUT)
AFTER_CALL = (CRASH_AFTER, TIMEOUT_AFTER, HANDLER_TIMEOUT)
CALL_KINDS = (*BEFORE_CALL, *AFTER_CALL, PARTIAL_PUT_EVENTS)
DELIVERY_KINDS = (DUPLICATE, REORDER, VISIBILITY_LAPSE)
ALL_KINDS = (*CALL_KINDS, *DELIVERY_KINDS)

Proceed = Callable[[dict[str, Any]], Any]
"""Makes the real call with these parameters and returns its parsed response."""

_DYNAMODB_THROTTLES = ("ProvisionedThroughputExceededException", "ThrottlingException")


@dataclass(frozen=True)
class Injected:
    kind: str
    site: str
    occurrence: int
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}@{self.site}#{self.occurrence}" + (f" ({self.detail})" if self.detail else "")


class FaultPlan:
    """Seeded decisions: at the n-th occurrence of a site, roll ``Random(f"{seed}|{site}|{n}")``.

    ``rates`` gives each kind's probability per eligible occurrence; ``max_faults`` caps how many of
    those are injected in all (later sites are still counted, so decisions do not shift). ``forced``
    injects a kind at a given (site, occurrence) whatever the rates, if the kind applies there.
    ``focus`` multiplies the rates at the sites of one scope (the part of a site before ``:``, e.g.
    ``ExecuteFunction``), so a schedule can concentrate on one function or queue.
    """

    def __init__(
        self,
        seed: int,
        rates: Mapping[str, float],
        *,
        max_faults: int | None = None,
        forced: Mapping[tuple[str, int], str] | None = None,
        focus: tuple[str, float] | None = None,
    ) -> None:
        unknown = (set(rates) | set((forced or {}).values())) - set(ALL_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {ALL_KINDS}")
        self.seed = seed
        self.rates = dict(rates)
        self.max_faults = max_faults
        self.forced = dict(forced or {})
        self.focus = focus
        self.injected: list[Injected] = []
        self._random = 0
        self._occurrences: Counter[str] = Counter()

    @property
    def counts(self) -> Counter[str]:
        return Counter(fault.kind for fault in self.injected)

    def choose(self, site: str, kinds: Sequence[str]) -> tuple[str, random.Random] | None:
        """Which of ``kinds`` to inject at this occurrence of ``site``, with an RNG for its details."""
        occurrence = self._occurrences[site]
        self._occurrences[site] += 1
        rng = random.Random(f"{self.seed}|{site}|{occurrence}")
        roll = rng.random()
        forced = self.forced.get((site, occurrence))
        if forced is not None and forced in kinds:
            self.injected.append(Injected(forced, site, occurrence))
            return forced, rng
        if self.max_faults is not None and self._random >= self.max_faults:
            return None
        scope = site.partition(":")[0]
        boost = self.focus[1] if self.focus is not None and scope == self.focus[0] else 1.0
        threshold = 0.0
        for kind in kinds:
            threshold += self.rates.get(kind, 0.0) * boost
            if roll < threshold:
                self._random += 1
                self.injected.append(Injected(kind, site, occurrence))
                return kind, rng
        return None

    def note(self, detail: str) -> None:
        """Adds a detail (which entries failed, how many copies) to the fault just injected."""
        last = self.injected[-1]
        self.injected[-1] = Injected(last.kind, last.site, last.occurrence, detail)


# ---------------------------------------------------------------------- the errors AWS would answer


def _client_error(operation: str, code: str, message: str, status: int, **extra: Any) -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status, "RequestId": "fault-injected"},
        **extra,
    }
    return ClientError(response, operation)


def throttling_error(
    service: str, operation: str, params: Mapping[str, Any], rng: random.Random
) -> ClientError:
    if service == "dynamodb":
        if operation == "TransactWriteItems" and rng.random() < 0.5:
            reasons = [
                {"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity"}
                for _ in params.get("TransactItems", [])
            ]
            return _client_error(
                operation,
                "TransactionCanceledException",
                "Transaction cancelled, please refer cancellation reasons for specific reasons "
                f"[{', '.join(r['Code'] for r in reasons)}]",
                400,
                CancellationReasons=reasons,
            )
        code = rng.choice(_DYNAMODB_THROTTLES)
    else:
        code = "ThrottlingException"
    return _client_error(operation, code, "Rate exceeded (fault injected)", 400)


def server_error(operation: str) -> ClientError:
    return _client_error(operation, "InternalServerError", "Internal server error (fault injected)", 500)


def timeout_error(service: str, rng: random.Random) -> ReadTimeoutError | ConnectTimeoutError:
    endpoint = f"https://{service}.us-east-1.amazonaws.com/"
    if rng.random() < 0.5:
        return ConnectTimeoutError(endpoint_url=endpoint)
    return ReadTimeoutError(endpoint_url=endpoint)


def put_events_with_failures(params: dict[str, Any], failed: set[int], proceed: Proceed) -> dict[str, Any]:
    """PutEvents where the entries at ``failed`` answer InternalFailure: only the others are really put."""
    entries: list[Any] = list(params.get("Entries", []))
    survivors = [entry for index, entry in enumerate(entries) if index not in failed]
    real: dict[str, Any] = proceed({**params, "Entries": survivors}) if survivors else {}
    delivered = iter(real.get("Entries", []))
    merged: list[dict[str, Any]] = []
    for index in range(len(entries)):
        if index in failed:
            merged.append(
                {"ErrorCode": "InternalFailure", "ErrorMessage": "Internal failure (fault injected)"}
            )
        else:
            merged.append(dict(next(delivered)))
    return {
        "FailedEntryCount": sum(1 for result in merged if "ErrorCode" in result),
        "Entries": merged,
        "ResponseMetadata": real.get("ResponseMetadata", {"HTTPStatusCode": 200}),
    }


def overrun(clock: LocalClock, function: FunctionInfo) -> None:
    """The running invocation stalls past its Timeout: the local clock jumps beyond its deadline (its
    context's remaining time is then 0) and the handler goes on; the runtime reports it timed out."""
    clock.advance(function.timeout + 1)
    os.environ[CLOCK_OFFSET_ENV] = str(clock.offset_seconds)  # the overlay restores it after the invocation


# ---------------------------------------------------------------------- the two seams


class CallFaults:
    """Faults at the AWS-call boundary. Hook ``intercept`` around every botocore call made inside a
    function (e.g. tests/botocore_calls.py); with ``plan`` None every call goes through untouched."""

    def __init__(self, clock: LocalClock, functions: Mapping[str, FunctionInfo]) -> None:
        self._clock = clock
        self._by_name = {function.name: function for function in functions.values()}
        self.plan: FaultPlan | None = None

    def intercept(
        self, function_name: str, service: str, operation: str, params: dict[str, Any], proceed: Proceed
    ) -> Any:
        plan = self.plan
        function = self._by_name.get(function_name)
        if plan is None or function is None:
            return proceed(params)
        kinds: list[str] = [*BEFORE_CALL, *AFTER_CALL]
        if operation == "PutEvents" and params.get("Entries"):
            kinds.append(PARTIAL_PUT_EVENTS)
        chosen = plan.choose(f"{function.logical_id}:{service}.{operation}", kinds)
        if chosen is None:
            return proceed(params)
        kind, rng = chosen
        if kind == THROTTLE:
            error = throttling_error(service, operation, params, rng)
            plan.note(str(error.response["Error"]["Code"]))
            raise error
        if kind == SERVER_ERROR:
            raise server_error(operation)
        if kind == TIMEOUT:
            timeout = timeout_error(service, rng)
            plan.note(type(timeout).__name__)
            raise timeout
        if kind == PARTIAL_PUT_EVENTS:
            count = len(params["Entries"])
            failed = set(rng.sample(range(count), rng.randint(1, count)))
            plan.note(f"{len(failed)} of {count} entries failed")
            return put_events_with_failures(params, failed, proceed)
        response = proceed(params)
        if kind == CRASH_AFTER:
            raise InvocationCrash(f"fault injected: crashed after {service}.{operation}")
        if kind == TIMEOUT_AFTER:
            raise ReadTimeoutError(endpoint_url=f"https://{service}.us-east-1.amazonaws.com/")
        overrun(self._clock, function)
        return response


class DeliveryFaults:
    """Faults in Lambda's SQS delivery; set it as ``Poller.faults`` (``LocalCloud.poller.faults``)."""

    def __init__(self, sqs: SQSClient) -> None:
        self._sqs = sqs
        self.plan: FaultPlan | None = None

    def batches(self, mapping: MappingInfo, messages: list[Message]) -> list[list[Message]]:
        plan = self.plan
        if plan is None:
            return [messages]
        queue = mapping.queue.logical_id
        for message in messages:
            chosen = plan.choose(f"{queue}:message", [DUPLICATE])
            if chosen is not None:
                copies = chosen[1].randint(1, 2)
                plan.note(f"{copies} extra cop{'y' if copies == 1 else 'ies'}")
                for _ in range(copies):
                    self._sqs.send_message(
                        QueueUrl=mapping.queue.url,
                        MessageBody=message["Body"],
                        MessageAttributes=message.get("MessageAttributes", {}),
                    )
        if len(messages) < 2:
            return [messages]
        chosen = plan.choose(f"{queue}:batch", [REORDER])
        if chosen is None:
            return [messages]
        rng = chosen[1]
        shuffled = list(messages)
        rng.shuffle(shuffled)
        cut = rng.randint(1, len(shuffled) - 1)
        plan.note(f"{len(shuffled)} messages, the last {len(shuffled) - cut} first")
        return [shuffled[cut:], shuffled[:cut]]

    def lapses(self, mapping: MappingInfo, invocation: Invocation) -> bool:
        """Never after a crash: the handler is no longer running, the batch comes back on its timeout."""
        plan = self.plan
        if plan is None or invocation.crashed:
            return False
        return plan.choose(f"{mapping.queue.logical_id}:lapse", [VISIBILITY_LAPSE]) is not None
