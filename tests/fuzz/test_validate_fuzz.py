"""Boundary 1: validate, fed arbitrary SQS bodies.

Whatever the body, nothing escapes ``handle``; the outcome is QUARANTINED iff exactly one quarantine
record appeared, with a reason; a quarantined input published nothing; an accepted one published
exactly its accepted fact. Inputs built to be well-formed are never quarantined.

Strategies are module-level constants: building one inside an example costs hypothesis more than
the stage call it feeds.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from intentbus import facts
from intentbus.envelope import MAX_ID_CHARS, Kind
from intentbus.extensions import MAX_EXTENSIONS_BYTES
from intentbus.inbound import MAX_BODY_BYTES
from intentbus.journal import Outcome
from intentbus.testing import bus_body, route
from tests.fuzz.support import (
    CATALOG,
    CHECKPOINTS,
    DEEP,
    DEFECT,
    FUZZ,
    JSON_POOL,
    LATENCY,
    PAD,
    SEED_TOOL_CALL,
    SEEDS,
    STAGES,
    TOOL_COMPLETED,
    WRONG_TYPES,
    Decisions,
    JsonPath,
    Mutated,
    assert_accepted,
    assert_promise,
    decisions,
    dumps,
    get,
    json_values,
    last_quarantine_field,
    mutated,
    names_location,
    new_pipeline,
    odd_text,
    paths,
    put,
    type_of,
    wrap,
)

TYPE_NAMES = sorted(spec.name for spec in CATALOG.types)
ensure_ascii = st.booleans()


def body_of(detail: Any, *, ascii_only: bool, detail_type: str | None = None) -> str:
    return dumps(wrap(detail, detail_type=detail_type or type_of(detail)), ensure_ascii=ascii_only)


# ---------------------------------------------------------------------------------------------
# Arbitrary bodies, delivered to every stage

arbitrary_bodies = st.one_of(
    st.text(),
    odd_text,
    st.builds(dumps, json_values, ensure_ascii=ensure_ascii),
)
"""Arbitrary text, odd unicode, and arbitrary JSON (either way of escaping non-ASCII)."""


@FUZZ
@given(body=arbitrary_bodies)
def test_arbitrary_bodies_are_quarantined_by_every_stage(body: str) -> None:
    pipeline = new_pipeline()
    for stage in STAGES:
        assert assert_promise(pipeline, stage, body).outcome is Outcome.QUARANTINED, stage


# ---------------------------------------------------------------------------------------------
# EventBridge-shaped dicts: fields missing, replaced or of the wrong type; extra fields; any detail

FACT_DETAILS = [checkpoints[0].document()["detail"] for checkpoints in CHECKPOINTS.values()]
FREE_TEXT = "<free text>"
WRAPPER_VALUES: dict[str, tuple[Any, ...]] = {
    "version": ("0", "1", "", FREE_TEXT),
    "id": ("", "eb-2", FREE_TEXT),
    "detail-type": (*TYPE_NAMES, "", " ", FREE_TEXT),
    "source": (facts.PIPELINE_SOURCE, facts.WORKFLOW_SOURCE, "aws.scheduler", "", FREE_TEXT),
    "account": ("", "000000000000", FREE_TEXT),
    "time": ("2026-12-01T09:00:00+02:00", "yesterday", "", 0, 1791859200, 1e300, FREE_TEXT),
    "region": ("", "eu-west-1", FREE_TEXT),
    "resources": ([], ["arn:aws:ecs:::service/shop/checkout-api"], [""], [FREE_TEXT]),
    "detail": (*SEEDS.values(), *FACT_DETAILS, "{}", *JSON_POOL),
}
WRAPPER_EXTRAS = ("replay-name", "detail_type", "Detail", "DetailType", "")
WRAPPER_KEYS = (*WRAPPER_VALUES, *WRAPPER_EXTRAS)
WRAPPER_TO_DETAIL = {"detail-type": "type", "source": "source", "time": "time"}
"""What the envelope takes from the EventBridge event when it does not say it itself."""
free_text = st.text(max_size=12)


def _free(value: Any, draw: st.DrawFn) -> Any:
    if isinstance(value, str) and value == FREE_TEXT:
        return draw(free_text)
    if isinstance(value, list):
        return [_free(item, draw) for item in value]
    return copy.deepcopy(value)


EVENTBRIDGE_DECISIONS = decisions(2 + 4 * 3)


@st.composite
def eventbridge_events(draw: st.DrawFn) -> tuple[dict[str, Any], list[JsonPath]]:
    """A seed's EventBridge event with up to four fields deleted, replaced, wrongly typed, or added."""
    choose = draw(EVENTBRIDGE_DECISIONS)
    seed = SEEDS[choose.choice(sorted(SEEDS))]
    event = wrap(copy.deepcopy(seed), detail_type=type_of(seed))
    changed: list[JsonPath] = []
    for _ in range(choose.below(5)):
        key = choose.choice(WRAPPER_KEYS)
        if key in WRAPPER_VALUES:
            action = choose.below(3)
            if action == 0:
                event.pop(key, None)
            elif action == 1:
                event[key] = copy.deepcopy(choose.choice(WRONG_TYPES))
            else:
                event[key] = _free(choose.choice(WRAPPER_VALUES[key]), draw)
        else:
            event[key] = copy.deepcopy(choose.choice(JSON_POOL))
        changed.append((key,))
    return event, changed


def _blamed(changed: list[JsonPath]) -> list[JsonPath]:
    """The changed paths, and the envelope fields taken from them."""
    out = list(changed)
    for path in changed:
        if path and path[0] in WRAPPER_TO_DETAIL:
            out.append(("detail", WRAPPER_TO_DETAIL[str(path[0])], *path[1:]))
        if path and path[0] == "detail_type":
            out.extend([("detail-type",), ("detail", "type")])
    return out


@FUZZ
@given(event=eventbridge_events(), ascii_only=ensure_ascii)
def test_eventbridge_shaped_dicts_at_every_stage(
    event: tuple[dict[str, Any], list[JsonPath]], ascii_only: bool
) -> None:
    document, changed = event
    body = dumps(document, ensure_ascii=ascii_only)
    pipeline = new_pipeline()
    result = assert_promise(pipeline, "validate", body)
    if result.outcome is Outcome.QUARANTINED:
        assert changed, "the unchanged seed was quarantined"
        field = last_quarantine_field(pipeline)
        if field is not None:
            blamed = _blamed(changed)
            assert any(names_location(field, path, bases=((), ("detail",))) for path in blamed), (
                field,
                changed,
            )
    else:
        assert_accepted(result)
    for stage in STAGES[1:]:
        assert_promise(pipeline, stage, body)


# ---------------------------------------------------------------------------------------------
# The real seeds, native and CloudEvents, with fields deleted, replaced, added, odd, deep or huge

OPEN_RESULT = (("payload", "result"), ("data", "result"))
MUTATED_SEEDS = {
    name: mutated(
        seed,
        keep=lambda path: path != (),
        # Deep nesting inside an open (Any) payload field raises: see the defect test below.
        nest=lambda path: path[:2] not in OPEN_RESULT,
    )
    for name, seed in SEEDS.items()
}
seed_cases = st.sampled_from([(seed, a) for seed in sorted(SEEDS) for a in (True, False)])


@st.composite
def mutated_seeds(draw: st.DrawFn) -> tuple[str, Mutated, bool]:
    seed, ascii_only = draw(seed_cases)
    return seed, draw(MUTATED_SEEDS[seed]), ascii_only


@FUZZ
@given(case=mutated_seeds())
def test_mutated_seed_envelopes(case: tuple[str, Mutated, bool]) -> None:
    seed, change, ascii_only = case
    document = wrap(change.document, detail_type=type_of(SEEDS[seed]))
    body = Mutated(document, deep=change.deep, pad=change.pad).text(ensure_ascii=ascii_only)
    pipeline = new_pipeline()
    result = assert_promise(pipeline, "validate", body)
    if result.outcome is Outcome.QUARANTINED:
        field = last_quarantine_field(pipeline)
        # Without specversion a CloudEvent is read as a native envelope (and with it, the other way
        # round): any of its fields may then be the wrong one.
        reinterpreted = any(m.path[:1] == ("specversion",) for m in change.mutations)
        if field is not None and not reinterpreted:
            assert any(names_location(field, m.path) for m in change.mutations), (field, change.mutations)
    else:
        assert_accepted(result)
        assert len(body.encode()) <= MAX_BODY_BYTES


# ---------------------------------------------------------------------------------------------
# CloudEvents structured mode, built from parts, with an oracle for which parts are wrong

ABSENT = "<absent>"
SHORT_ID = "<short id>"
SHORT_TEXT = "<short text>"
COUNT = "<count>"
Option = tuple[Any, bool]
"""A value (SHORT_ID, SHORT_TEXT, COUNT stand for drawn ones; ABSENT for none) and whether it is wrong."""


def _attribute(default: Any, valid: list[Any], invalid: list[Any]) -> tuple[Option, tuple[Option, ...]]:
    """The attribute's well-formed default, and its variations."""
    return (default, False), (*((value, False) for value in valid), *((value, True) for value in invalid))


def _ce_attributes(kind: Kind) -> dict[str, tuple[Option, tuple[Option, ...]]]:
    detail_type = SEED_TOOL_CALL["event_type"] if kind is Kind.COMMAND else LATENCY["type"]
    other_type = LATENCY["type"] if kind is Kind.COMMAND else SEED_TOOL_CALL["event_type"]
    other_kind = Kind.EVENT.value if kind is Kind.COMMAND else Kind.COMMAND.value
    return {
        "specversion": _attribute("1.0", [ABSENT], ["0.3", "1", 1.0, None]),
        "id": _attribute(ABSENT, [SHORT_ID, "i" * MAX_ID_CHARS, None], [7, "", "i" * (MAX_ID_CHARS + 1)]),
        "source": _attribute(ABSENT, [SHORT_ID, None], ["", 7]),
        "type": _attribute(detail_type, [ABSENT, None], [7, other_type]),
        "time": _attribute(
            ABSENT, ["2026-12-01T08:59:00Z", "2026-12-01T09:59:00+01:00", None], ["soon", True]
        ),
        "subject": _attribute(ABSENT, [None, SHORT_TEXT], [7, []]),
        "kind": _attribute(ABSENT, [kind.value], [other_kind, 7]),
        # JSON null is an unset attribute (the JSON format): the field is derived as if absent.
        "traceid": _attribute(ABSENT, [SHORT_ID, "t" * 128, None], ["", 7, "t" * 129]),
        "runid": _attribute(ABSENT, [SHORT_ID, None], ["", 7, [], "r" * 129]),
        "correlationid": _attribute(ABSENT, [SHORT_ID, None], ["", 7]),
        "causationid": _attribute(ABSENT, [None, SHORT_ID], [7, [], {}]),
        "idempotencykey": _attribute(ABSENT, [SHORT_ID, None], ["", 7, "k" * 129]),
        "stepindex": _attribute(ABSENT, [COUNT, 0, 2**31, "3", None], [-1, "three", 1.5, []]),
        "depth": _attribute(ABSENT, [0, 6, None], [-1, "deep", 0.5]),
        "version": _attribute(ABSENT, [COUNT, 0, None], [-1, "v1", 2.5]),
        "datacontenttype": _attribute(
            ABSENT,
            ["application/json", "application/json; charset=utf-8", "application/vnd.acme+json", None],
            ["", 7, "json", "text plain", [], {}],
        ),
        "dataschema": _attribute(ABSENT, ["https://schemas.example/x.json", None], ["", 7, {}]),
        "traceparent": _attribute(
            ABSENT, ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"], ["", 7]
        ),
        "tracestate": _attribute(ABSENT, ["congo=t61rcWkgMzE", None], [7, []]),
        "tenant": _attribute("tenantid", ["tenant_id", "both"], ["invalid", ABSENT]),
        "carrier": _attribute("data", ["payload"], ["both", ABSENT, "data_base64", "data_text"]),
        # Any other extension attribute is kept, if CloudEvents has a type for its value.
        "unknown": _attribute(
            ABSENT,
            [
                ("partitionkey", SHORT_TEXT),
                ("sequence", 7),
                ("comexampleextension1", True),
                ("sampledrate", None),
                ("x", -(2**31)),
            ],
            [
                ("comexampleextension1", {}),
                ("sequence", 2**31),
                ("sampledrate", 0.5),
                ("partitionkey", []),
                ("Partition-Key", "p"),
                ("partition_key", "p"),
                ("comexamplebig", "x" * MAX_EXTENSIONS_BYTES),
            ],
        ),
    }


KINDS = (Kind.COMMAND, Kind.EVENT)
CE_ATTRIBUTES = {kind: _ce_attributes(kind) for kind in KINDS}
INVALID_TENANTS = ("", "has space", 7, None, "-leading")
ENVELOPE_NAMES = {
    "traceid": "trace_id",
    "runid": "run_id",
    "correlationid": "correlation_id",
    "causationid": "causation_id",
    "idempotencykey": "idempotency_key",
    "stepindex": "step_index",
    "depth": "depth",
    "version": "version",
}
CE_ONLY_KEYS = {
    *(key for key, name in ENVELOPE_NAMES.items() if key != name),
    "tenantid",
    "data_base64",
}
"""CloudEvents' names for what the native envelope calls otherwise (or does not have)."""
short_ids = st.text(min_size=1, max_size=12).filter(lambda s: s != facts.PIPELINE_SOURCE)
short_texts = st.text(max_size=12)
counts = st.integers(0, 2**63)


def _drawn(value: Any, draw: st.DrawFn) -> Any:
    """The value, or one drawn for the placeholder it is."""
    if isinstance(value, str) and value == SHORT_ID:
        return draw(short_ids)
    if isinstance(value, str) and value == SHORT_TEXT:
        return draw(short_texts)
    if isinstance(value, str) and value == COUNT:
        return draw(counts)
    return copy.deepcopy(value)


def _tenant_and_payload(
    event: dict[str, Any],
    chosen: dict[str, Any],
    problems: set[str],
    native: dict[str, Any],
    choose: Decisions,
) -> None:
    """Where the event says its tenant and carries its payload, as chosen."""
    tenant = chosen["tenant"]
    if tenant in ("tenantid", "both"):
        event["tenantid"] = native["tenant_id"]
    if tenant in ("tenant_id", "both"):
        event["tenant_id"] = native["tenant_id"]
    if tenant == "invalid":
        event["tenantid"] = choose.choice(INVALID_TENANTS)
    if "tenant" in problems:
        problems.add("tenant_id")
    payload = copy.deepcopy(native["payload"])
    carrier = chosen["carrier"]
    if carrier in ("data", "both"):
        event["data"] = payload
    if carrier in ("payload", "both"):
        event["payload"] = payload
    if carrier == "data_base64":
        event["data_base64"] = base64.b64encode(json.dumps(payload).encode()).decode()
    if carrier == "data_text":
        event["data"] = json.dumps(payload)
    if "carrier" in problems:
        problems.update({"data", "payload", "data_base64"})


CLOUDEVENT_DECISIONS = decisions(2 + 5 * 2 + 3)


@st.composite
def cloudevents(draw: st.DrawFn) -> tuple[dict[str, Any], str, set[str]]:
    """A CloudEvent, its detail-type, and the fields an oracle says are wrong (empty: well-formed).

    Every attribute starts well-formed; up to five are varied, each to another valid or an invalid
    value.
    """
    choose = draw(CLOUDEVENT_DECISIONS)
    kind = choose.choice(KINDS)
    native = SEED_TOOL_CALL if kind is Kind.COMMAND else LATENCY
    attributes = CE_ATTRIBUTES[kind]
    names = sorted(attributes)
    varied = {choose.choice(names) for _ in range(choose.below(6))}
    chosen: dict[str, Any] = {}
    problems: set[str] = set()
    for name, (default, variations) in attributes.items():
        value, wrong = choose.choice(variations) if name in varied else default
        chosen[name] = _drawn(value, draw)
        if wrong:
            problems.add(name)
    event = {
        name: value
        for name, value in chosen.items()
        if not (isinstance(value, str) and value == ABSENT) and name not in ("tenant", "carrier", "unknown")
    }
    _tenant_and_payload(event, chosen, problems, native, choose)
    extension = chosen["unknown"]
    if extension != ABSENT:
        name, value = extension
        event[name] = _drawn(value, draw)
        if "unknown" in problems:
            problems.add(name)
    if "specversion" not in event:
        # Not CloudEvents, then: the extension attributes are unknown fields of a native envelope.
        problems.update(key for key in event if key in CE_ONLY_KEYS)
        if extension != ABSENT:
            problems.add(extension[0])
        # ... and null is a value there, not an unset attribute (an envelope's depth and version are
        # integers).
        problems.update(
            key
            for key in ("id", "source", "type", "time", "depth", "version")
            if key in event and event[key] is None
        )
        if "tenant_id" not in event:
            problems.add("tenant_id")
    problems -= {"tenant", "carrier", "unknown"}
    return event, type_of(native), problems


@FUZZ
@given(case=cloudevents(), ascii_only=ensure_ascii)
def test_cloudevents_structured_mode(case: tuple[dict[str, Any], str, set[str]], ascii_only: bool) -> None:
    event, detail_type, problems = case
    pipeline = new_pipeline()
    result = assert_promise(
        pipeline, "validate", body_of(event, ascii_only=ascii_only, detail_type=detail_type)
    )
    if not problems:
        assert_accepted(result)
        envelope = result.envelope
        assert envelope is not None
        assert envelope.tenant_id == event.get("tenantid", event.get("tenant_id"))
        assert envelope.type == detail_type
        for extension, name in ENVELOPE_NAMES.items():
            if event.get(extension) is not None:
                assert str(getattr(envelope, name)) == str(event[extension]), name
        return
    assert result.outcome is Outcome.QUARANTINED, f"accepted although {sorted(problems)} are wrong"
    field = last_quarantine_field(pipeline)
    assert field is not None
    assert any(names_location(field, (problem,)) for problem in problems), (field, problems)


# ---------------------------------------------------------------------------------------------
# Timestamps: int, float, ISO strings, garbage

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
YEAR_1000_US = -30_610_224_000 * 10**6
YEAR_9998_US = 253_370_764_800 * 10**6
ODD_TIMES = (
    "2026-12-01",
    "2026-12-01 09:00",
    "2026-12-01T09:00:00.123456789Z",
    "2026-12-01T24:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-12-01T09:00:00+25:00",
    "2026-W48-2",
    "20261201T090000Z",
    "Tue, 01 Dec 2026 09:00:00 GMT",
    "1791859200",
    "1791859200.5",
    "-1",
    "1e10",
    "0x6acd3e00",
    "\u0662\u0660\u0662\u0666-12-01",
    "",
    "now",
)
STAMP_KINDS = ("epoch", "any_int", "float", "non_finite", "iso", "naive", "text", "wrong")
TIMESTAMP_CASES = st.sampled_from(
    [
        (seed, key, ascii_only, kind)
        for seed in ("seed_tool_call", "latency")
        for key in ("timestamp", "time")
        for ascii_only in (True, False)
        for kind in STAMP_KINDS
    ]
)
epoch_seconds = st.integers(-(2 * 10**10), 2 * 10**10)
moments_us = st.integers(YEAR_1000_US, YEAR_9998_US)
offset_minutes = st.integers(-(23 * 60 + 59), 23 * 60 + 59)
odd_times = st.sampled_from(ODD_TIMES) | st.text(max_size=24)
finite_seconds = st.floats(-(2e10), 2e10, allow_nan=False)
non_finite = st.sampled_from([float("nan"), float("inf"), float("-inf")])
wrong_stamps = st.sampled_from([True, False, None, [], {}, [1791859200], {"seconds": 1}])


def timestamp(
    draw: Callable[[st.SearchStrategy[Any]], Any], kind: str
) -> tuple[Any, datetime | None, bool | None]:
    """A timestamp of that kind, the time it means if known, and whether it is valid (``None``: either)."""
    if kind == "epoch":
        seconds = draw(epoch_seconds)
        return seconds, EPOCH + timedelta(seconds=seconds), True
    if kind == "any_int":
        return draw(st.integers()), None, None
    if kind == "float":
        return draw(finite_seconds), None, True
    if kind == "non_finite":
        return draw(non_finite), None, False
    if kind in ("iso", "naive"):
        moment = EPOCH + timedelta(microseconds=draw(moments_us))
        if kind == "iso":
            offset = timezone(timedelta(minutes=draw(offset_minutes)))
            return moment.astimezone(offset).isoformat(), moment, True
        return moment.replace(tzinfo=None).isoformat(), moment, True
    if kind == "text":
        return draw(odd_times), None, None
    return draw(wrong_stamps), None, False


@FUZZ
@given(case=TIMESTAMP_CASES, data=st.data())
def test_timestamps(case: tuple[str, str, bool, str], data: st.DataObject) -> None:
    seed, key, ascii_only, kind = case
    value, meaning, valid = timestamp(data.draw, kind)
    detail = {k: v for k, v in SEEDS[seed].items() if k not in ("timestamp", "time")}
    detail[key] = value
    pipeline = new_pipeline()
    result = assert_promise(pipeline, "validate", body_of(detail, ascii_only=ascii_only))
    if valid is False:
        assert result.outcome is Outcome.QUARANTINED
    if valid is True:
        assert result.outcome is not Outcome.QUARANTINED, pipeline.quarantine.records[-1]["reason"]
    if result.outcome is Outcome.QUARANTINED:
        field = last_quarantine_field(pipeline)
        if field is None:  # NaN and Infinity are not JSON at all: there is no field to name
            assert str(result.reason).startswith("body is not JSON"), result.reason
        else:
            assert names_location(field, (key,)), field
    else:
        assert_accepted(result)
        assert result.envelope is not None
        assert result.envelope.time.utcoffset() == timedelta(0)
        if meaning is not None:
            assert result.envelope.time == meaning


# ---------------------------------------------------------------------------------------------
# Well-formed input is never quarantined, and its accepted fact is not quarantined by the next stage

TENANTS = ("a", "Z", "0", "acme", "org_enterprise_alpha", "a-b_c", "9" * 64, "A" + "_-" * 31 + "z")
tenants = st.sampled_from(TENANTS)
IDS = (SHORT_ID, SHORT_ID, "i" * 128, "\U0001f642", " ", "\u202e", "\x00", "a.b", "run_01hx7a9e8v7p2m")
EPOCH_DRAWN = "<epoch>"
OPTIONAL: dict[str, tuple[Any, ...]] = {
    "id": IDS,
    "source": (SHORT_ID, "s" * 256, "monitoring.example"),  # intentbus.* is the pipeline's own
    "run_id": IDS,
    "trace_id": IDS,
    "correlation_id": IDS,
    "causation_id": (None, *IDS),
    "idempotency_key": IDS,
    "step_index": (COUNT, 0, 1, 2**31),
    "depth": (0, 1, 7, 8, 9, 12),
    "version": (COUNT, 0, 3),
    "subject": (None, SHORT_TEXT, ""),
    "time": (0, 1, 1791859200, 2 * 10**10, EPOCH_DRAWN),  # beyond 2e10 pydantic reads epoch milliseconds
}
epochs = st.integers(0, 2 * 10**10)
CE_NAMES = {
    "tenant_id": "tenantid",
    "trace_id": "traceid",
    "run_id": "runid",
    "step_index": "stepindex",
    "idempotency_key": "idempotencykey",
    "causation_id": "causationid",
    "correlation_id": "correlationid",
}
CUSTOMER_IDS = ("c", "cust_88219", "-", "_", "C-9" * 21 + "x")
STATUSES = ("lead", "qualified", "customer", "churned")
CLUSTERS = ("shop", "\u00e9", "c" * 255, "\U0001f642", "a b")
ENVIRONMENTS = ("dev", "staging", "production")
THRESHOLDS = (5e-324, 0.001, 1, 500.0, 1e300)
services = st.text(min_size=1, max_size=16) | st.just("s" * 255)
latencies = st.floats(min_value=0, max_value=1e300) | st.integers(0, 2**53)


WELL_FORMED_DECISIONS = decisions(6 + 2 * len(OPTIONAL) + 8)


@st.composite
def well_formed(draw: st.DrawFn) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """A well-formed input (native or CloudEvents), its type, and the fields it fixed."""
    choose = draw(WELL_FORMED_DECISIONS)
    kind = choose.choice(KINDS)
    if kind is Kind.COMMAND:
        type_name = SEED_TOOL_CALL["event_type"]
        payload: dict[str, Any] = {
            "tool_name": "crm_record_upsert",
            "parameters": {"customer_id": choose.choice(CUSTOMER_IDS), "status": choose.choice(STATUSES)},
        }
    else:
        type_name = LATENCY["type"]
        payload = {
            "service": draw(services),
            "cluster": choose.choice(CLUSTERS),
            "environment": choose.choice(ENVIRONMENTS),
            "p99_ms": draw(latencies),
            "threshold_ms": choose.choice(THRESHOLDS),
        }
    fixed: dict[str, Any] = {"tenant_id": choose.choice(TENANTS), "type": type_name, "payload": payload}
    for name, values in OPTIONAL.items():
        if choose.flag():
            value = choose.choice(values)
            fixed[name] = draw(epochs) if value == EPOCH_DRAWN else _drawn(value, draw)
    if choose.flag():
        fixed["kind"] = kind.value
    form = _as_cloudevent if choose.flag() else _as_native
    return form(fixed, choose), type_name, fixed


CARRIED = {
    "comexampleorigin": "probe-7",
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
}
"""What a CloudEvent may say beyond the workflow's fields, carried on with its envelope."""


def _as_cloudevent(fixed: dict[str, Any], choose: Decisions) -> dict[str, Any]:
    event: dict[str, Any] = {"specversion": "1.0"}
    for name, value in fixed.items():
        if name == "payload":
            event["data" if choose.flag() else "payload"] = value
        elif name == "time":
            event["time"] = (EPOCH + timedelta(seconds=value)).isoformat()
        else:
            event[CE_NAMES.get(name, name)] = value
    if choose.flag():
        event["datacontenttype"] = "application/json"
    if choose.flag():
        event |= CARRIED
    return event


def _as_native(fixed: dict[str, Any], choose: Decisions) -> dict[str, Any]:
    native = dict(fixed)
    if choose.flag():
        native["event_type"] = native.pop("type")
    if choose.flag() and "time" in native:
        native["timestamp"] = native.pop("time")
    if choose.flag():
        native.pop("type", None)
        native.pop("event_type", None)
    return native


NEXT_STAGE_OUTCOMES = {Outcome.APPLIED, Outcome.PAUSED}


@FUZZ
@given(case=well_formed(), ascii_only=ensure_ascii)
def test_well_formed_input_is_never_quarantined(
    case: tuple[dict[str, Any], str, dict[str, Any]], ascii_only: bool
) -> None:
    detail, type_name, fixed = case
    body = body_of(detail, ascii_only=ascii_only, detail_type=type_name)
    pipeline = new_pipeline()
    first = assert_promise(pipeline, "validate", body)
    assert first.outcome is Outcome.APPLIED, pipeline.quarantine.records
    assert_accepted(first)
    envelope = first.envelope
    assert envelope is not None
    assert envelope.tenant_id == fixed["tenant_id"]
    assert envelope.type == type_name
    spec = CATALOG.types.get(type_name)
    assert envelope.payload == spec.model.model_validate(fixed["payload"]).model_dump(mode="json")
    for name in ("id", "source", "run_id", "trace_id", "step_index", "depth", "subject", "idempotency_key"):
        if name in fixed:
            assert getattr(envelope, name) == fixed[name], name
    if "time" in fixed:
        assert envelope.time == EPOCH + timedelta(seconds=fixed["time"])

    (accepted,) = first.published
    if "comexampleorigin" in detail:
        for carrier in (envelope, accepted):
            assert carrier.extensions == {"comexampleorigin": CARRIED["comexampleorigin"]}
            assert carrier.traceparent == CARRIED["traceparent"]
    target = route(accepted)
    assert target is not None
    onward = assert_promise(pipeline, target, bus_body(accepted))
    assert onward.outcome in NEXT_STAGE_OUTCOMES, (target, onward.outcome, onward.reason)


# ---------------------------------------------------------------------------------------------
# Deep nesting and oversized bodies


def _latency_with(field: str, placeholder: str) -> dict[str, Any]:
    detail = copy.deepcopy(LATENCY)
    if field.startswith("payload."):
        detail["payload"][field.removeprefix("payload.")] = placeholder
    else:
        detail[field] = placeholder
    return detail


@pytest.mark.parametrize("depth", [255, 256, 300, 600, 900, 1_000, 10_000, 100_000])
@pytest.mark.parametrize("shape", ["list", "dict"])
@pytest.mark.parametrize("where", ["payload.service", "payload.extra", "subject", "detail", "body"])
def test_deep_nesting_is_quarantined_not_a_recursion_error(depth: int, shape: str, where: str) -> None:
    if where == "body":
        body = Mutated(DEEP, deep=(depth, shape)).text(ensure_ascii=True)
    elif where == "detail":
        body = Mutated(wrap(DEEP, detail_type="ServiceLatencyIncreased"), deep=(depth, shape)).text(
            ensure_ascii=True
        )
    else:
        document = wrap(_latency_with(where, DEEP), detail_type="ServiceLatencyIncreased")
        body = Mutated(document, deep=(depth, shape)).text(ensure_ascii=True)
    result = assert_promise(new_pipeline(), "validate", body)
    assert result.outcome is Outcome.QUARANTINED


@pytest.mark.parametrize("depth", [255, 256, 300, 600])  # past ~950 json.loads refuses it (quarantined)
@pytest.mark.parametrize("shape", ["list", "dict"])
def test_deep_nesting_in_an_open_payload_field_is_quarantined(depth: int, shape: str) -> None:
    detail = copy.deepcopy(TOOL_COMPLETED)
    detail["payload"]["result"]["extra"] = DEEP
    body = Mutated(wrap(detail, detail_type=type_of(detail)), deep=(depth, shape)).text(ensure_ascii=True)
    result = assert_promise(new_pipeline(), "validate", body)
    assert result.outcome is Outcome.QUARANTINED


@pytest.mark.parametrize(
    ("where", "pad", "accepted"),
    [
        ("subject", 1_000, True),
        ("subject", 300_000, False),
        ("payload.service", 300_000, False),
        ("payload.extra", 270_000, False),
    ],
)
def test_payloads_over_256_kb_are_quarantined(where: str, pad: int, accepted: bool) -> None:
    document = wrap(_latency_with(where, PAD), detail_type="ServiceLatencyIncreased")
    body = Mutated(document, pad=pad).text(ensure_ascii=True)
    pipeline = new_pipeline()
    result = assert_promise(pipeline, "validate", body)
    assert (result.outcome is not Outcome.QUARANTINED) is accepted
    if not accepted:
        assert "256 KB" in pipeline.quarantine.records[-1]["reason"]


# ---------------------------------------------------------------------------------------------
# Defects found by these tests (strict xfail: each passes once the library is fixed)


def _string_paths(document: Any) -> list[JsonPath]:
    return [path for path in paths(document) if path and isinstance(get(document, path), str)]


@DEFECT
@given(digits=st.integers(4_301, 20_000), seed=st.sampled_from(sorted(SEEDS)), data=st.data())
@example(digits=4_301, seed="latency", data=None)
def test_a_number_literal_over_4300_digits_is_quarantined(
    digits: int, seed: str, data: st.DataObject | None
) -> None:
    document = wrap(copy.deepcopy(SEEDS[seed]), detail_type=type_of(SEEDS[seed]))
    candidates = _string_paths(document)
    path = data.draw(st.sampled_from(candidates)) if data is not None else ("detail", "tenant_id")
    put(document, path, PAD)
    body = dumps(document, ensure_ascii=True).replace(json.dumps(PAD), "9" * digits)
    pipeline = new_pipeline()
    assert assert_promise(pipeline, "validate", body).outcome is Outcome.QUARANTINED


surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


@DEFECT
@given(seed=st.sampled_from(sorted(SEEDS)), surrogate=surrogates, data=st.data())
@example(seed="latency", surrogate="\ud800", data=None)
def test_a_lone_surrogate_escape_is_quarantined(
    seed: str, surrogate: str, data: st.DataObject | None
) -> None:
    detail = copy.deepcopy(SEEDS[seed])
    candidates = _string_paths(detail)
    path = data.draw(st.sampled_from(candidates)) if data is not None else ("payload", "service")
    put(detail, path, get(detail, path) + surrogate)
    body = body_of(detail, ascii_only=True, detail_type=type_of(SEEDS[seed]))
    assert body.isascii()
    pipeline = new_pipeline()
    assert assert_promise(pipeline, "validate", body).outcome is Outcome.QUARANTINED


def test_a_body_with_a_raw_lone_surrogate_is_quarantined() -> None:
    pipeline = new_pipeline()
    assert assert_promise(pipeline, "validate", "\ud800").outcome is Outcome.QUARANTINED


NON_FINITE = ["Infinity", "-Infinity", "NaN", "1e309", "-1e400"]
NUMERIC_FIELDS = [
    ("ServiceLatencyIncreased", "p99_ms"),
    ("ServiceLatencyIncreased", "threshold_ms"),
    ("DiagnosisRequested", "p99_ms"),
    ("DependencyFailureSuspected", "error_rate"),
]


def _numeric_event(type_name: str, field: str) -> dict[str, Any]:
    service = {"service": "checkout-api", "cluster": "shop", "environment": "dev"}
    payloads = {
        "ServiceLatencyIncreased": {**service, "p99_ms": 1240.0, "threshold_ms": 500.0},
        "DiagnosisRequested": {**service, "p99_ms": 1240.0, "datapoints": 5, "window_minutes": 15},
        "DependencyFailureSuspected": {
            **service,
            "dependency": "payments-db",
            "error_rate": 0.32,
            "checked": {"payments-db": 0.32},
        },
    }
    payload = dict(payloads[type_name])
    payload[field] = PAD
    return {"tenant_id": "acme", "type": type_name, "payload": payload}


@DEFECT
@given(token=st.sampled_from(NON_FINITE), target=st.sampled_from(NUMERIC_FIELDS))
@example(token="Infinity", target=("ServiceLatencyIncreased", "threshold_ms"))
def test_non_finite_numbers_are_quarantined(token: str, target: tuple[str, str]) -> None:
    detail = _numeric_event(*target)
    body = body_of(detail, ascii_only=True).replace(json.dumps(PAD), token)
    pipeline = new_pipeline()
    result = assert_promise(pipeline, "validate", body)
    assert result.outcome is Outcome.QUARANTINED, (
        f"accepted {target[1]}={token}: published {result.published}"
    )


@pytest.mark.parametrize("token", ["1e309", "Infinity"])
def test_what_validate_accepts_never_raises_in_a_later_stage(token: str) -> None:
    detail = _numeric_event("ServiceLatencyIncreased", "threshold_ms")
    pipeline = new_pipeline()
    pipeline.run(body_of(detail, ascii_only=True).replace(json.dumps(PAD), token))


@DEFECT
@given(
    seed=st.sampled_from(sorted(SEEDS)), wrapper_source=st.sampled_from(["monitoring.example", "crm.example"])
)
@example(seed="latency", wrapper_source="monitoring.example")
def test_an_envelope_claiming_the_pipeline_source_is_quarantined(seed: str, wrapper_source: str) -> None:
    detail = {**SEEDS[seed], "source": facts.PIPELINE_SOURCE}
    body = dumps(wrap(detail, detail_type=type_of(detail), source=wrapper_source), ensure_ascii=True)
    pipeline = new_pipeline()
    result = assert_promise(pipeline, "validate", body)
    assert result.outcome is Outcome.QUARANTINED, (
        f"accepted with source {result.envelope and result.envelope.source}"
    )
    assert last_quarantine_field(pipeline) == "source"


@DEFECT
@given(
    pair=st.sampled_from([("tenantid", "tenant_id"), ("runid", "run_id"), ("traceid", "trace_id")]),
    first=tenants,
    second=tenants,
    seed=st.sampled_from(["latency_ce", "seed_tool_call_ce"]),
)
@example(pair=("tenantid", "tenant_id"), first="acme", second="globex", seed="latency_ce")
def test_conflicting_cloudevents_attribute_and_envelope_name_are_quarantined(
    pair: tuple[str, str], first: str, second: str, seed: str
) -> None:
    extension, native = pair
    if first == second:
        return
    detail = {**SEEDS[seed], extension: first, native: second}
    pipeline = new_pipeline()
    result = assert_promise(pipeline, "validate", body_of(detail, ascii_only=True))
    assert result.outcome is Outcome.QUARANTINED, f"{extension}={first!r} and {native}={second!r} accepted"


@DEFECT
@given(detail=json_values.filter(lambda value: not isinstance(value, dict)))
@example(detail=[1])
def test_a_detail_that_is_not_an_object_is_named_detail(detail: Any) -> None:
    pipeline = new_pipeline()
    body = dumps(wrap(detail, detail_type="ServiceLatencyIncreased"), ensure_ascii=True)
    assert assert_promise(pipeline, "validate", body).outcome is Outcome.QUARANTINED
    assert last_quarantine_field(pipeline) == "detail"
    assert "BaseModel" not in pipeline.quarantine.records[-1]["reason"]
