"""The local cloud's EventBridge matching (intentbus_local.events_hot_paths): pinned to the moto source it
replaces, and answering what moto's own ``EventPattern.matches_event`` answers."""

from __future__ import annotations

import json
import warnings
from typing import Any

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws

from intentbus_local import events_hot_paths, hot_paths, moto_fixes

REGION = "us-east-1"
PATTERNS: list[dict[str, Any]] = [
    {},
    {"source": ["intentbus.validate"]},
    {"source": ["intentbus.validate"], "detail-type": ["a", "b"]},
    {"detail": {"type": ["a"], "tenant": [{"prefix": "t1"}]}},
    {"detail": {"n": [{"numeric": [">", 2, "<=", 10]}]}},
    {"detail": {"nested": {"k": [{"exists": True}]}}},
    {"detail": {"nested": {"k": [{"exists": False}]}}},
    {"detail": {"type": [{"anything-but": ["b"]}]}},
    {"$or": [{"detail": {"type": ["a"]}}, {"detail": {"n": [3]}}]},
    {"time": [{"exists": True}], "ingestion-time": [{"numeric": [">", 0]}]},
    {"time": ["2026-01-01T00:00:00Z"]},
    {"detail": {"list": ["x"]}},
]
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 15), st.sampled_from(["a", "b", "t1x", "x"]))
_detail: st.SearchStrategy[dict[str, Any]] = st.dictionaries(
    st.sampled_from(["type", "tenant", "n", "nested", "list"]),
    st.one_of(
        _scalar,
        st.lists(_scalar, max_size=3),
        st.dictionaries(st.sampled_from(["k", "j"]), st.one_of(_scalar, st.just({})), max_size=2),
    ),
    max_size=5,
)
_time = st.one_of(st.floats(0, 2e9), st.just("2026-01-01T00:00:00Z"), st.integers(0, 10))


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert events_hot_paths.PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {events_hot_paths.PINS.found_on}): compare "
        "the replacement with moto's new code, then update its digest"
    )
    assert events_hot_paths.base_message_uses() == list(events_hot_paths.BASE_MESSAGE_USES), (
        "moto's EventBridge uses its base event message otherwise than by a deepcopy"
    )
    moto_fixes.apply()  # which hands moto's own put_events and send_to_targets to the replacement
    assert events_hot_paths.PUT_EVENTS_PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {events_hot_paths.PUT_EVENTS_PINS.found_on})"
    )
    assert events_hot_paths.JSONPATH_PINS.changed() == [], (
        f"jsonpath_ng changed code the replacement relies on ({events_hot_paths.JSONPATH_PINS.found_on})"
    )


def _event(detail: dict[str, Any], time: Any, ingested: Any) -> Any:
    """A message as put_events builds one for a rule (moto types it as a TypedDict)."""
    return {
        "version": "0",
        "id": "e-1",
        "detail-type": "a",
        "source": "intentbus.validate",
        "account": "123456789012",
        "time": time,
        "region": REGION,
        "resources": [],
        "detail": detail,
        "ingestion-time": ingested,
    }


@pytest.mark.usefixtures("hot_paths_applied")
@given(detail=_detail, times=st.lists(st.tuples(_time, _time), min_size=1, max_size=3))
def test_every_pattern_matches_as_moto_s_own_matching_does(
    detail: dict[str, Any], times: list[tuple[Any, Any]]
) -> None:
    """The same entry against every rule (each with its own clock reads), as put_events delivers it."""
    from moto.events.models import EventPattern

    moto_s = events_hot_paths.PINS.moto_original("EventPattern.matches_event")
    for time, ingested in times:
        for raw in PATTERNS:
            pattern = EventPattern(json.dumps(raw), raw)
            event = _event(json.loads(json.dumps(detail)), time, ingested)
            assert pattern.matches_event(event) == moto_s(pattern, event), (raw, event)


def test_an_object_for_time_takes_moto_s_own_code() -> None:
    hot_paths.apply()
    from moto.events.models import EventPattern

    moto_s = events_hot_paths.PINS.moto_original("EventPattern.matches_event")
    raw = {"time": {"at": [1]}}
    pattern = EventPattern(json.dumps(raw), raw)
    event = _event({"type": "a"}, {"at": 1}, 5)
    assert pattern.matches_event(event) is moto_s(pattern, event) is True


def test_a_bus_s_rules_deliver_to_the_queues_whose_patterns_match() -> None:
    hot_paths.apply()
    with mock_aws():
        events = boto3.client("events", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        urls = {}
        for name, pattern in [("typed-a", {"detail": {"type": ["a"]}}), ("from-b", {"source": ["b"]})]:
            urls[name] = sqs.create_queue(QueueName=name)["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=urls[name], AttributeNames=["QueueArn"])["Attributes"]
            events.put_rule(Name=name, EventPattern=json.dumps(pattern))
            events.put_targets(Rule=name, Targets=[{"Id": "q", "Arn": arn["QueueArn"]}])
        events.put_events(
            Entries=[
                {"Source": "a", "DetailType": "t", "Detail": json.dumps({"type": "a"})},
                {"Source": "b", "DetailType": "t", "Detail": json.dumps({"type": "c"})},
                {"Source": "b", "DetailType": "t", "Detail": json.dumps({"type": "a"})},
            ]
        )
        received = {
            name: sorted(
                (json.loads(m["Body"])["source"], json.loads(m["Body"])["detail"]["type"])
                for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            )
            for name, url in urls.items()
        }
    assert received == {"typed-a": [("a", "a"), ("b", "a")], "from-b": [("b", "a"), ("b", "c")]}


_text = st.one_of(
    st.sampled_from(["", "a", "<id>", "<source>", 'q"uote', "back\\slash", "<aws.events.event.json>"]),
    st.text(max_size=6),
)
_value = st.one_of(_scalar, _text, st.floats(allow_nan=True), st.lists(st.one_of(_scalar, _text), max_size=2))
_paths = st.sampled_from(
    [
        "$.id",
        "$.detail",
        "$.detail-type",
        "$.source",
        "$.time",
        "$.nope",
        "$.detail.type",
        "$['source']",
        "$.*",
        "$..type",
        "$.resources[0]",
        " $.region ",
        "not a path (",
    ]
)


@pytest.mark.usefixtures("hot_paths_applied")
@given(
    fields=st.dictionaries(
        st.sampled_from(["id", "detail-type", "source", "account", "time", "region", "resources", "nope"]),
        _value,
        max_size=8,
    ),
    detail=st.one_of(_detail, _value),
    paths=st.one_of(
        st.just({}), st.dictionaries(st.sampled_from(["id", "a", "source", "x"]), _paths, max_size=4)
    ),
    template=st.one_of(
        st.none(),
        st.just('{"id": "<id>", "a": <a>, "x": "<x>", "source": "<source>"}'),
        st.just('{"all": <aws.events.event.json>, "at": <aws.events.event.ingestion-time>}'),
    ),
    ingested=st.one_of(st.floats(0, 2e9), st.just("x")),
)
def test_each_target_s_input_is_built_as_moto_s_own_parse_builds_it(
    fields: dict[str, Any], detail: Any, paths: dict[str, str], template: str | None, ingested: Any
) -> None:
    """Every outcome alike: the same input, or the same exception, over paths jsonpath_ng reads as one
    field and others, messages missing fields, and values that break the template."""
    from moto.events.utils import EventTemplateParser

    moto_s = events_hot_paths.PINS.moto_original("EventTemplateParser.parse")
    assert EventTemplateParser.parse is not moto_s
    event: Any = {**fields, "detail": detail, "ingestion-time": ingested}
    outcomes = []
    parsers: tuple[Any, ...] = (EventTemplateParser.parse, moto_s)
    for parse in parsers:
        try:
            outcomes.append(
                ("input", json.dumps(parse(input_template=template, input_paths_map=paths, event=event)))
            )
        except Exception as error:  # the outcome compared is the exception's type
            outcomes.append(("raised", type(error).__name__))
    assert outcomes[0] == outcomes[1], (paths, template, event)


@pytest.mark.usefixtures("hot_paths_applied")
@given(
    fields=st.fixed_dictionaries(
        {
            "id": _text,
            "detail-type": _text,
            "source": _text,
            "account": _text,
            "region": _text,
            "resources": st.lists(_text, max_size=2),
        }
    ),
    detail=st.one_of(_detail, _value).map(lambda detail: json.loads(json.dumps(detail))),
    paths=st.one_of(
        st.just({}), st.dictionaries(st.sampled_from(["id", "a", "source", "x"]), _paths, max_size=4)
    ),
    template=st.one_of(
        st.none(),
        st.just('{"id": "<id>", "a": <a>, "x": "<x>", "source": "<source>"}'),
        st.just('{"all": <aws.events.event.json>, "at": <aws.events.event.ingestion-time>}'),
        st.just('{"archive-arn": "arn:aws:events:r:1:archive/a:u", "event": <aws.events.event.json>}'),
    ),
    times=st.tuples(_time, st.floats(0, 2e9)),
)
def test_a_plain_message_s_input_is_built_as_moto_s_own_parse_builds_it(
    fields: dict[str, Any],
    detail: Any,
    paths: dict[str, str],
    template: str | None,
    times: tuple[Any, float],
) -> None:
    """The message ``_deliver`` hands a rule (plain JSON data), with the texts of the placeholders its
    template does not name left unmade: the same input, or the same exception, as moto's own parse."""
    from moto.events.utils import EventTemplateParser

    moto_s = events_hot_paths.PINS.moto_original("EventTemplateParser.parse")
    event: Any = {"version": "0", **fields, "time": times[0], "detail": detail}
    event["ingestion-time"] = times[1]
    outcomes = []
    parsers: tuple[Any, ...] = (EventTemplateParser.parse, moto_s)
    for parse in parsers:
        events_hot_paths._sending[:] = [event, None]
        try:
            outcomes.append(
                ("input", json.dumps(parse(input_template=template, input_paths_map=paths, event=event)))
            )
        except Exception as error:  # the outcome compared is the exception's type
            outcomes.append(("raised", type(error).__name__))
        finally:
            events_hot_paths._sending[:] = [None, None]
    assert outcomes[0] == outcomes[1], (paths, template, event)


def test_the_base_event_message_copies_as_deepcopy_copies_it() -> None:
    """Equal, a plain dict, and sharing nothing that can change with the base or another copy."""
    import copy

    hot_paths.apply()
    from moto.events import models, utils

    base = models._BASE_EVENT_MESSAGE  # type: ignore[attr-defined]
    assert type(base) is not dict
    first, second = copy.deepcopy(base), copy.deepcopy(base)
    assert type(first) is dict
    assert first == second == copy.deepcopy(dict(base)) == utils._BASE_EVENT_MESSAGE
    assert list(first) == list(utils._BASE_EVENT_MESSAGE)
    first["resources"].append("r")
    first["detail"]["k"] = 1
    assert base["resources"] == second["resources"] == []
    assert base["detail"] == second["detail"] == {}


_ENTRY_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "Source": st.sampled_from(["intentbus.validate", "b", ""]),
        "DetailType": st.sampled_from(["a", "t", ""]),
        "Detail": st.one_of(
            _detail.map(json.dumps), st.sampled_from(["", "{not json", "[1, 2]", '"text"', "null"])
        ),
        "Time": st.one_of(_time, st.just({"at": 1})),
        "Resources": st.lists(st.sampled_from(["arn:r1", "arn:r2"]), max_size=2),
    },
)


def _deliveries(put_events: Any, entries: list[dict[str, Any]]) -> tuple[Any, ...]:
    """What one put_events answers and leaves in each rule's queue and in the archive (clock and random
    fields left out), on a bus of rules for every pattern, one of them disabled."""
    from moto.events.models import events_backends
    from moto.sqs.models import sqs_backends

    with mock_aws():
        events = boto3.client("events", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        archive = events.create_archive(
            ArchiveName="all", EventSourceArn=f"arn:aws:events:{REGION}:123456789012:event-bus/default"
        )["ArchiveArn"]
        for number, pattern in enumerate(PATTERNS):
            url = sqs.create_queue(QueueName=f"q{number}")["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
            events.put_rule(
                Name=f"r{number}", EventPattern=json.dumps(pattern or {"source": [{"prefix": ""}]})
            )
            events.put_targets(Rule=f"r{number}", Targets=[{"Id": "q", "Arn": arn["QueueArn"]}])
        url = sqs.create_queue(QueueName="whole")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
        whole: Any = {"InputTemplate": '{"all": <aws.events.event.json>}', "InputPathsMap": {}}
        events.put_targets(
            Rule="r0", Targets=[{"Id": "w", "Arn": arn["QueueArn"], "InputTransformer": whole}]
        )
        events.disable_rule(Name="r1")
        backend = events_backends["123456789012"][REGION]
        try:
            answered: Any = [
                sorted((key, len(value)) for key, value in e.items()) for e in put_events(backend, entries)
            ]
        except json.JSONDecodeError as error:
            # where it failed moves with the clock's digits (a time in the default template)
            answered = (type(error).__name__, error.msg)
        except Exception as error:
            answered = (type(error).__name__, str(error))
        queues = sqs_backends["123456789012"][REGION].queues

        def unstamped(body: str) -> Any:
            message = json.loads(body)
            if set(message) == {"all"}:  # the whole message, through a template naming it
                return {"all": unstamped(json.dumps(message["all"]))}
            return {k: v for k, v in message.items() if k not in ("id", "time", "ingestion-time")}

        received = {
            name: [unstamped(message.body) for message in queue._messages]
            for name, queue in sorted(queues.items())
        }
        archived = [
            {k: v for k, v in e.items() if k not in ("id", "time", "ingestion-time", "replay-name")}
            for e in backend.archives["all"].events
        ]
        del archive
    return answered, received, archived


_TOO_MANY = [{"Source": "s", "DetailType": "t", "Detail": "{}"}] * 11


@settings(deadline=None, max_examples=40)
@given(entries=st.lists(_ENTRY_FIELDS, max_size=4) | st.just(_TOO_MANY))
def test_put_events_delivers_what_moto_s_own_delivers(entries: list[dict[str, Any]]) -> None:
    hot_paths.apply()
    moto_fixes.apply()
    moto_s = moto_fixes.moto_original("EventsBackend.put_events")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        matching_first = events_hot_paths.matching_first(
            moto_s, moto_fixes.moto_original("Rule.send_to_targets")
        )
        assert matching_first is not moto_s
        assert _deliveries(matching_first, entries) == _deliveries(moto_s, entries)


def test_a_rule_whose_pattern_does_not_match_gets_no_message_built(monkeypatch: Any) -> None:
    """Fails when the local cloud's put_events builds every rule's message and hands it over, as moto's
    own does."""
    hot_paths.apply()
    moto_fixes.apply()
    from moto.events.models import Rule

    handed: list[str] = []
    send = Rule.send_to_targets

    def counted(self: Any, event: Any, transform_input: bool = True) -> None:
        handed.append(self.name)
        send(self, event, transform_input)

    monkeypatch.setattr(Rule, "send_to_targets", counted)

    def installed(backend: Any, entries: list[dict[str, Any]]) -> Any:
        return backend.put_events(entries)  # moto_fixes' size check, and what it wraps

    _deliveries(installed, [{"Source": "b", "DetailType": "t", "Detail": json.dumps({"type": "c"})}])

    # the archive's rule, any source, no nested.k, anything but "b", a time: of the bus's 13 rules
    assert sorted(handed) == ["Events-Archive-all", "r0", "r6", "r7", "r9"]


def test_a_matched_rule_s_message_is_matched_once_and_dumped_only_where_a_template_names_it(
    monkeypatch: Any,
) -> None:
    """Fails when ``send_to_targets`` matches again the pattern ``_deliver`` just matched, a target's
    input dumps the whole message (or its detail) for a template without ``<aws.events.event.json>``
    (or ``<detail>``), or a plain entry's message is flattened through JSON."""
    hot_paths.apply()
    moto_fixes.apply()
    from moto.events.models import EventPattern
    from moto.events.utils import EventTemplateParser

    matched: list[int] = []
    dumped: list[str] = []
    does_match = EventPattern._does_event_match
    stringify = EventTemplateParser._stringify

    def counted_match(self: Any, event: Any, pattern: Any, *prefix: Any) -> Any:
        if not prefix:  # a whole pattern, not a nested part of one
            matched.append(id(self))
        return does_match(self, event, pattern, *prefix)

    def counted_dump(value: Any) -> Any:
        if isinstance(value, dict):
            dumped.append("message" if "detail-type" in value else "detail")
        return stringify(value)

    monkeypatch.setattr(EventPattern, "_does_event_match", counted_match)
    monkeypatch.setattr(EventTemplateParser, "_stringify", staticmethod(counted_dump))
    through_json: list[Any] = []
    flattened = events_hot_paths.flattened

    def counted_flattened(event: Any) -> Any:
        through_json.append(event)
        return flattened(event)

    monkeypatch.setattr(events_hot_paths, "flattened", counted_flattened)

    def installed(backend: Any, entries: list[dict[str, Any]]) -> Any:
        return backend.put_events(entries)

    answered, received, _ = _deliveries(
        installed, [{"Source": "b", "DetailType": "t", "Detail": json.dumps({"type": "c"})}]
    )
    assert [sorted(entry) for entry in answered] == [[("EventId", 36)]], answered
    assert len(received["whole"]) == 1  # r0's second target: its template names the whole message
    # one match per rule (each of PATTERNS' and the archive's); the message is dumped for the two
    # templates that name it (the "whole" target's and the archive's), its detail for the default
    # template of each matched rule's queue (r0, r6, r7, r9)
    assert len(matched) == len(set(matched)) == len(PATTERNS) + 1
    assert sorted(dumped) == ["detail"] * 4 + ["message"] * 2
    assert through_json == []  # the entry's message flattened as it is, not through JSON
