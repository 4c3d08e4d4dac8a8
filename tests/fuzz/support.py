"""What the fuzz tests share: strategies, the seed inputs, real pipeline facts, and the promise itself.

The promise: malformed input never enters the pipeline, never raises out of a stage, and lands in
quarantine with a reason (naming the field where there is one); well-formed input is never
quarantined.
"""

from __future__ import annotations

import copy
import json
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from intentbus import facts
from intentbus.catalog import Catalog
from intentbus.claims import check_out
from intentbus.envelope import Envelope, Kind
from intentbus.journal import LogEntry, Outcome, proof_key
from intentbus.policy import Effect, Verdict
from intentbus.stages.common import StageResult
from intentbus.testing import InMemoryPipeline, InMemoryRunner, InMemoryStore, bus_body, route
from intentbus.validation_errors import KEY
from intentbus.workflows import direct_tool, incident
from intentbus_local.seed import latency_event

ROOT = Path(__file__).resolve().parents[2]

FUZZ = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""Every boundary runs at least 2,000 examples."""
DEFECT = settings(FUZZ, max_examples=300, report_multiple_bugs=False)
"""For the strict-xfail tests of known defects. Each fails on its explicit ``@example`` at once; once
the library is fixed it becomes a regression test, and 300 examples keep the run within budget. One
failure, raised as itself, is what ``xfail(raises=...)`` expects."""

CATALOG = Catalog([incident.workflow, direct_tool.workflow])

SEED_TOOL_CALL: dict[str, Any] = json.loads((ROOT / "infra/events/seed_tool_call.json").read_text())
"""The real seed: a native envelope of a command (TOOL_EXECUTION_REQUESTED), accepted verbatim."""
LATENCY: dict[str, Any] = latency_event()
"""What a monitoring system sends: ServiceLatencyIncreased, the workflow fields left to derive."""

MESSAGE_ID = "msg-fuzz-1"
STAGES = ("validate", "decide", "authorize", "execute", "record")


def type_of(envelope: dict[str, Any]) -> str:
    return str(envelope.get("event_type") or envelope.get("type"))


def cloudevent(native: dict[str, Any]) -> dict[str, Any]:
    """The same input as a CloudEvents structured-mode event: data, and extension attributes."""
    event: dict[str, Any] = {
        "specversion": "1.0",
        "id": native.get("id", "ce-fuzz-1"),
        "source": native.get("source", "monitoring.example"),  # the EventBridge source it is sent with
        "type": type_of(native),
        "time": "2026-12-01T08:59:00Z",
        "datacontenttype": "application/json",
        "tenantid": native["tenant_id"],
        "data": copy.deepcopy(native["payload"]),
    }
    for name, extension in (
        ("run_id", "runid"),
        ("trace_id", "traceid"),
        ("step_index", "stepindex"),
        ("idempotency_key", "idempotencykey"),
    ):
        if name in native:
            event[extension] = native[name]
    return event


TOOL_COMPLETED: dict[str, Any] = {
    "tenant_id": "org_enterprise_alpha",
    "type": direct_tool.COMPLETED,
    "payload": {
        "tool_name": "crm_record_upsert",
        "result": {
            "customer_id": "cust_88219",
            "status": "qualified",
            "previous_status": None,
            "created": True,
        },
    },
}
"""A workflow event another system may send whose payload has an open field (``result: dict[str, Any]``)."""

SEEDS: dict[str, dict[str, Any]] = {
    "seed_tool_call": SEED_TOOL_CALL,
    "latency": LATENCY,
    "tool_completed": TOOL_COMPLETED,
    "seed_tool_call_ce": cloudevent(SEED_TOOL_CALL),
    "latency_ce": cloudevent(LATENCY),
}


def wrap(detail: Any, *, detail_type: str, source: str | None = None) -> dict[str, Any]:
    """The EventBridge event an SQS queue receives from a rule, as a dict. Its source is the one the
    producer sent with: the envelope's own (which must match it), else ``monitoring.example``."""
    if source is None:
        claimed = detail.get("source") if isinstance(detail, dict) else None
        source = claimed if isinstance(claimed, str) and claimed else "monitoring.example"
    return {
        "version": "0",
        "id": "eb-fuzz-1",
        "detail-type": detail_type,
        "source": source,
        "account": "123456789012",
        "time": "2026-12-01T09:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": detail,
    }


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (several times faster than copy.deepcopy)."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


# ---------------------------------------------------------------------------------------------
# JSON strategies and pools of odd values

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=16)
)
"""Finite numbers only: ``NaN`` and ``Infinity`` are not JSON (see the non-finite defect tests)."""


def _json(max_leaves: int) -> st.SearchStrategy[Any]:
    return st.recursive(
        json_leaves,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


json_values = _json(5)
"""Arbitrary JSON values: null, booleans, numbers, strings, arrays and objects, nested."""

WRONG_TYPES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1,
    2**63,
    1.5,
    -0.0,
    1e308,
    "",
    " ",
    "0",
    "null",
    [],
    [1],
    {},
    {"": None},
)
"""Values of the wrong type for nearly every field of an envelope (copy them before use: they get mutated)."""

ODD_STRINGS: tuple[str, ...] = (
    "\x00",
    "\x1b[31m",
    "\t\r\n",
    "\u200b",
    "\u200d",
    "\u202e" + "gnp.exe",
    "\ufeff",
    "\u2028\u2029",
    "e\u0301\u0301\u0301",
    "\U0001f642",
    "\U0010ffff",
    "\uffff",
    "\ufffd",
    "\u0130",
    "\u00df",
    "\uff21",
    "\\ud800",
    "%s%n",
    "${jndi:x}",
    '"quoted"',
    "a\\b",
    "<script>",
    "' OR 1=1 --",
    "NaN",
    "Infinity",
    "1e309",
    "null",
    "true",
    "-0",
    "0x1F",
    " leading",
    "trailing ",
    "x" * 129,
    "x" * 257,
    "\u00e9" * 200,
)
"""Odd unicode and odd strings: NUL, escapes, zero-width and bidi marks, BOM, separators, combining
marks, astral and non-characters, case-mapping traps, lookalikes, injection-shaped, too long."""
odd_text = st.sampled_from(ODD_STRINGS) | st.text()

JSON_POOL: tuple[Any, ...] = (
    *WRONG_TYPES,
    *ODD_STRINGS[:12],
    {"a": [1, {"b": None}]},
    [[[[[]]]]],
    {"": {"": {"": {}}}},
    [None, True, 1, 1.5, "s", [], {}],
    {"tenant_id": "acme", "payload": {}},
    {"\U0001f642": "\u202e"},
    10**30,
    -(10**30),
    5e-324,
    1.7976931348623157e308,
    list(range(50)),
    {str(i): i for i in range(50)},
)
"""Replacement values: wrong types, odd strings, nesting, extremes."""

FIELD_NAMES = (
    "id",
    "type",
    "event_type",
    "time",
    "timestamp",
    "source",
    "specversion",
    "kind",
    "tenant_id",
    "tenantid",
    "trace_id",
    "run_id",
    "runid",
    "step_index",
    "idempotency_key",
    "causation_id",
    "correlation_id",
    "depth",
    "version",
    "payload",
    "data",
    "data_base64",
    "datacontenttype",
    "subject",
    "command",
    "event",
    "verdict",
    "result",
    "error",
    "decision_id",
    "detail",
    "detail-type",
    "",
    " ",
    "Tenant_Id",
    "payload ",
    "a.b",
    "__proto__",
    "\U0001f642",
    "\u200b",
)
"""Keys to add: the envelope's own names (in the wrong place, or twice by alias), near-misses, odd keys."""


def dumps(value: Any, *, ensure_ascii: bool) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii)


# ---------------------------------------------------------------------------------------------
# Mutating JSON documents

JsonPath = tuple[str | int, ...]

DEEP = "@@fuzz-deep@@"
PAD = "@@fuzz-pad@@"
DEEP_SHAPES = tuple((depth, shape) for depth in (300, 1_000, 10_000, 100_000) for shape in ("list", "dict"))
"""300 lies between pydantic's serializer limit (255) and json.loads' (~1,000 frames, more under
hypothesis, which raises the recursion limit while a test runs)."""
PAD_SIZES = (1_000, 200_000, 262_144, 300_000)


def paths(document: Any, prefix: JsonPath = ()) -> Iterator[JsonPath]:
    """Every node's path, parents before children."""
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from paths(value, (*prefix, index))


def get(document: Any, path: JsonPath) -> Any:
    for part in path:
        document = document[part]
    return document


def put(document: Any, path: JsonPath, value: Any) -> Any:
    if not path:
        return value
    get(document, path[:-1])[path[-1]] = value
    return document


def delete(document: Any, path: JsonPath) -> Any:
    parent = get(document, path[:-1])
    del parent[path[-1]]
    return document


@dataclass(frozen=True)
class Mutation:
    op: str
    path: JsonPath

    def __str__(self) -> str:
        return f"{self.op} {'.'.join(str(part) for part in self.path) or '<root>'}"


@dataclass
class Mutated:
    document: Any
    mutations: list[Mutation] = field(default_factory=list)
    deep: tuple[int, str] | None = None
    pad: int | None = None

    def text(self, *, ensure_ascii: bool) -> str:
        """The document as JSON, with the deep nesting and the padding spliced in as text."""
        text = dumps(self.document, ensure_ascii=ensure_ascii)
        if self.deep is not None:
            depth, shape = self.deep
            nested = "[" * depth + "]" * depth if shape == "list" else '{"a":' * depth + "0" + "}" * depth
            text = text.replace(json.dumps(DEEP), nested)
        if self.pad is not None:
            text = text.replace(json.dumps(PAD), json.dumps("x" * self.pad))
        return text


class Decisions:
    """Structural choices read from one drawn byte string.

    On this machine every hypothesis draw costs ~0.5 ms, so an example built from a dozen draws
    costs more than the stages it feeds. One ``st.binary()`` draw is one choice that hypothesis
    still explores, mutates and shrinks: towards zero bytes, that is towards the first option of
    every choice.
    """

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.at = 0

    def below(self, n: int) -> int:
        """A number in ``range(n)``."""
        high, low = self.raw[self.at : self.at + 2].ljust(2, b"\0")
        self.at += 2
        return ((high << 8) | low) % n

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.below(len(options))]

    def flag(self) -> bool:
        return self.below(2) == 1


def decisions(choices: int) -> st.SearchStrategy[Decisions]:
    """Bytes for that many choices. Fixed length: hypothesis draws short byte strings far more often
    than long ones, which would leave every later choice at its first option; a shrunk example still
    has all-zero bytes, the first option of every choice."""
    return st.binary(min_size=2 * choices, max_size=2 * choices).map(Decisions)


def _operations(document: Any, path: JsonPath) -> Iterator[str]:
    target = get(document, path)
    yield "replace"
    yield "wrong_type"
    if path:
        yield "delete"
    if isinstance(target, dict):
        yield "add"
    if isinstance(target, str):
        yield "odd_text"


def mutated(
    document: Any,
    *,
    keep: Callable[[JsonPath], bool] = lambda path: True,
    nest: Callable[[JsonPath], bool] = lambda path: True,
) -> st.SearchStrategy[Mutated]:
    """The document with 1-3 fields deleted, replaced by wrong types or odd text, or unknown fields added.

    ``keep(path)`` says which paths may be mutated. One mutation in ten instead nests the field
    300-100,000 levels deep (where ``nest(path)`` too), one in ten pads it to push the body past 256 KB.
    """
    original = copy_json(document)
    original_paths = [path for path in paths(original) if keep(path)]
    enough = decisions(1 + 3 * 5)

    @st.composite
    def strategy(draw: st.DrawFn) -> Mutated:
        choose = draw(enough)
        result = Mutated(copy_json(original))
        for index in range(1 + choose.below(3)):
            kept = original_paths if index == 0 else [path for path in paths(result.document) if keep(path)]
            if not kept:
                break
            special = choose.below(10)  # 0-7: an ordinary mutation; 8: deep nesting; 9: padding
            path = choose.choice(kept)
            if special == 8 and result.deep is None and nest(path):
                result.deep = choose.choice(DEEP_SHAPES)
                result.document = put(result.document, path, DEEP)
                result.mutations.append(Mutation("deep", path))
                continue
            if special == 9 and result.pad is None:
                result.pad = choose.choice(PAD_SIZES)
                result.document = put(result.document, path, PAD)
                result.mutations.append(Mutation("pad", path))
                continue
            op = choose.choice(tuple(_operations(result.document, path)))
            if op == "delete":
                delete(result.document, path)
            elif op == "replace":
                result.document = put(result.document, path, copy_json(choose.choice(JSON_POOL)))
            elif op == "wrong_type":
                result.document = put(result.document, path, copy_json(choose.choice(WRONG_TYPES)))
            elif op == "odd_text":
                result.document = put(result.document, path, draw(odd_text))
            else:
                target = get(result.document, path)
                key = choose.choice(FIELD_NAMES)
                if key in target:
                    continue
                target[key] = copy_json(choose.choice(JSON_POOL))
                path = (*path, key)
            result.mutations.append(Mutation(op, path))
        return result

    return strategy()


# ---------------------------------------------------------------------------------------------
# Quarantine fields


ALIASES = {
    "event_type": "type",
    "timestamp": "time",
    "data": "payload",
    "tenantid": "tenant_id",
    "traceid": "trace_id",
    "runid": "run_id",
    "stepindex": "step_index",
    "idempotencykey": "idempotency_key",
    "causationid": "causation_id",
    "correlationid": "correlation_id",
    "data_base64": "payload",
}
"""A field may be named by what the producer sent or by the envelope's name for it."""


def _dotted(parts: Sequence[str | int]) -> str:
    return ".".join(str(part) for part in parts)


def _canonical(location: str, base: str) -> str:
    """The location with the field right under ``base`` spelled by its envelope name."""
    prefix = f"{base}." if base else ""
    if not location.startswith(prefix):
        return location
    head, dot, tail = location[len(prefix) :].partition(".")
    return prefix + ALIASES.get(head, head) + dot + tail


def names_location(field_name: str, path: JsonPath, *, bases: Sequence[JsonPath] = ((),)) -> bool:
    """Whether a quarantine field names the mutated path, one of its parents or one of its children.

    The field is read from one of ``bases`` (``detail.`` for validate, which names envelope fields
    relative to the envelope). Locations are compared as dotted strings, so a key holding a dot
    cannot make two different paths look alike, or the same path look different. A field names a key
    of the input that its schema does not name as ``<key>`` (it never repeats the input): that stands
    for any key under the location before it.
    """
    for base_path in bases:
        base = _dotted(base_path)
        named = _canonical(f"{base}.{field_name}" if base else field_name, base)
        mutated_at = _canonical(_dotted(path), base)
        if KEY in named:
            parent = named.split(KEY, 1)[0]
            if mutated_at.startswith(parent) or parent.startswith(f"{mutated_at}."):
                return True
        elif named == mutated_at or named.startswith(f"{mutated_at}.") or mutated_at.startswith(f"{named}."):
            return True
    return False


# ---------------------------------------------------------------------------------------------
# The promise


def assert_promise(
    pipeline: InMemoryPipeline, stage: str, body: str, message_id: str = MESSAGE_ID
) -> StageResult:
    """Deliver ``body`` to ``stage`` and check the promise; returns the result for more checks.

    No exception may escape ``handle``; the outcome is QUARANTINED iff the quarantine got exactly
    one new record, with a non-empty reason; a quarantined input published nothing; any other
    outcome published exactly what the result says it published.
    """
    quarantined_before = len(pipeline.quarantine.records)
    published_before = len(pipeline.bus.published)
    result = pipeline.stages[stage].handle(body, message_id)
    new_records = pipeline.quarantine.records[quarantined_before:]
    new_published = pipeline.bus.published[published_before:]
    if result.outcome is Outcome.QUARANTINED:
        assert len(new_records) == 1, f"quarantined, but {len(new_records)} quarantine records"
        (record,) = new_records
        assert isinstance(record["reason"], str), record
        assert record["reason"].strip(), f"empty reason: {record!r}"
        assert record["reason"] == result.reason
        assert record["stage"] == stage
        assert record["body"] == body
        assert record["message_id"] == message_id
        assert record["field"] is None or (isinstance(record["field"], str) and record["field"]), record
        assert new_published == [], f"quarantined but published {[e.type for e in new_published]}"
        assert result.published == ()
    else:
        assert new_records == [], f"{result.outcome.value} but quarantined: {new_records[0]['reason']}"
        # The bus publishes a large fact claim-checked (intentbus.claims): the same fact once resolved.
        assert [check_out(envelope, pipeline.claims) for envelope in new_published] == list(result.published)
    return result


def assert_accepted(result: StageResult) -> None:
    """validate let the input in: exactly the accepted fact for it was published."""
    assert result.outcome in (Outcome.APPLIED, Outcome.DUPLICATE), result.outcome
    envelope = result.envelope
    assert envelope is not None
    (fact,) = result.published
    assert fact.source == facts.PIPELINE_SOURCE
    assert fact.causation_id == envelope.id
    if envelope.kind is Kind.COMMAND:
        assert fact.type == facts.COMMAND_PROPOSED
        assert fact.payload["command"] == envelope.to_json_dict()
    else:
        assert fact.type == facts.EVENT_ACCEPTED
        assert fact.payload["event"] == envelope.to_json_dict()
    spec = CATALOG.types.get(envelope.type)
    assert spec.owner != "intentbus", "a pipeline fact's type entered the pipeline"
    assert spec.kind is envelope.kind
    spec.model.model_validate(envelope.payload)


def last_quarantine_field(pipeline: InMemoryPipeline) -> str | None:
    value = pipeline.quarantine.records[-1]["field"]
    assert value is None or isinstance(value, str)
    return value


# ---------------------------------------------------------------------------------------------
# Fakes of the AWS APIs the seed tools call, so that execute runs the real tools in memory


class _CloudWatch:
    def get_metric_statistics(self, **kwargs: Any) -> dict[str, Any]:
        return {"Datapoints": [{"Maximum": 880.0}, {"Maximum": 1240.0}]}

    def get_metric_data(self, **kwargs: Any) -> dict[str, Any]:
        return {
            "MetricDataResults": [
                {"Id": query["Id"], "Values": [0.32], "StatusCode": "Complete"}
                for query in kwargs["MetricDataQueries"]
            ]
        }

    def list_metrics(self, **kwargs: Any) -> dict[str, Any]:
        service = kwargs["Dimensions"][0]["Value"]
        return {
            "Metrics": [
                {
                    "Dimensions": [
                        {"Name": "Service", "Value": service},
                        {"Name": "Dependency", "Value": "payments-db"},
                    ]
                }
            ]
        }


class _Ecs:
    def describe_services(self, **kwargs: Any) -> dict[str, Any]:
        return {"services": [{"serviceName": kwargs["services"][0], "desiredCount": 2}]}

    def update_service(self, **kwargs: Any) -> dict[str, Any]:
        return {"service": {"desiredCount": kwargs["desiredCount"]}}


class _DynamoDb:
    def update_item(self, **kwargs: Any) -> dict[str, Any]:
        return {}


class FakeClients:
    def client(self, service_name: str) -> object:
        clients: dict[str, object] = {"cloudwatch": _CloudWatch(), "ecs": _Ecs(), "dynamodb": _DynamoDb()}
        return clients[service_name]


def new_pipeline(
    store: InMemoryStore | None = None, runner: InMemoryRunner | None = None
) -> InMemoryPipeline:
    return InMemoryPipeline(
        CATALOG,
        clients=FakeClients(),
        store=store or InMemoryStore(),
        runner=runner or InMemoryRunner(),
    )


# ---------------------------------------------------------------------------------------------
# Real pipeline facts: the seeds run through the in-memory pipeline, stopped before each stage


@dataclass(frozen=True)
class Checkpoint:
    """A fact as the pipeline delivered it to ``stage``, and the durable state just before."""

    name: str
    stage: str
    body: str
    store: InMemoryStore
    runner: InMemoryRunner

    def pipeline(self) -> InMemoryPipeline:
        """A pipeline in the state the fact found: the store's and runner's contents are copied."""
        store = InMemoryStore(
            states=dict(self.store.states),
            logs={key: dict(entries) for key, entries in self.store.logs.items()},
            approvals=dict(self.store.approvals),
            resources=dict(self.store.resources),
            authorizations=dict(self.store.authorizations),
        )
        runner = InMemoryRunner(results=dict(self.runner.results), payloads=dict(self.runner.payloads))
        return new_pipeline(store, runner)

    def document(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.body)
        return loaded


def _snapshot(name: str, stage: str, body: str, pipeline: InMemoryPipeline) -> Checkpoint:
    frozen = Checkpoint(name, stage, body, pipeline.store, pipeline.runner).pipeline()
    return Checkpoint(name, stage, body, frozen.store, frozen.runner)


def _denial(proposed_at: Checkpoint) -> Checkpoint:
    """A CommandDenied as authorize publishes it, for the command ``proposed_at`` carries."""
    proposed = Envelope.model_validate(proposed_at.document()["detail"])
    command = facts.CommandProposed.model_validate(proposed.payload).command
    denied = proposed.follow(
        stage="authorize",
        type=facts.COMMAND_DENIED,
        kind=Kind.EVENT,
        time=proposed.time,
        source=facts.PIPELINE_SOURCE,
        payload=facts.CommandDenied(
            command=command,
            verdict=Verdict(effect=Effect.DENY, rule="fuzz", reason="denied for the fuzz tests"),
        ).model_dump(mode="json"),
    )
    # Recorded as authorize records a denial, so record finds the fact in authorize's entry.
    frozen = proposed_at.pipeline()
    verdict = LogEntry(
        stage="authorize",
        input_id=proposed.id,
        input_type=command.type,
        outcome=Outcome.DENIED,
        at=proposed.time,
        version=proposed.version,
        outputs=(denied,),
    )
    frozen.store.logs.setdefault((command.tenant_id, command.run_id), {})[
        proof_key("authorize", proposed.id)
    ] = verdict
    return Checkpoint(f"{proposed_at.name}:denied", "record", bus_body(denied), frozen.store, frozen.runner)


def _build_checkpoints() -> dict[str, list[Checkpoint]]:
    by_stage: dict[str, list[Checkpoint]] = {"decide": [], "authorize": [], "execute": [], "record": []}
    for seed_name in ("latency", "seed_tool_call"):
        seed = SEEDS[seed_name]
        pipeline = new_pipeline()
        queue: deque[tuple[str, str]] = deque(
            [("validate", dumps(wrap(seed, detail_type=type_of(seed)), ensure_ascii=True))]
        )
        while queue:
            stage, body = queue.popleft()
            if stage in by_stage:
                checkpoint = _snapshot(f"{seed_name}:{stage}:{len(by_stage[stage])}", stage, body, pipeline)
                by_stage[stage].append(checkpoint)
            for envelope in pipeline.deliver(stage, body).published:
                target = route(envelope)
                if target is not None:
                    queue.append((target, bus_body(envelope)))
        assert not pipeline.quarantine.records, pipeline.quarantine.records
    first_incident_proposal = next(c for c in by_stage["authorize"] if c.name.startswith("latency"))
    by_stage["record"].append(_denial(first_incident_proposal))
    return by_stage


CHECKPOINTS = _build_checkpoints()
"""decide: 1 EventAccepted and 3 domain events straight from record (incident: the fourth, RecoveryCompleted,
ends its run and goes to no stage); authorize: 4
CommandProposed from decide and 1 sent directly; execute: 5 CommandAuthorized; record: 4 CommandExecuted,
1 CommandFailed and 1 CommandDenied."""
