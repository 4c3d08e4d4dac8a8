"""The local cloud's EventBridge matching (intentbus_local.events_hot_paths): pinned to the moto source it
replaces, and answering what moto's own ``EventPattern.matches_event`` answers."""

from __future__ import annotations

import json
from typing import Any

import boto3
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from intentbus_local import events_hot_paths, hot_paths

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


@given(detail=_detail, times=st.lists(st.tuples(_time, _time), min_size=1, max_size=3))
def test_every_pattern_matches_as_moto_s_own_matching_does(
    detail: dict[str, Any], times: list[tuple[Any, Any]]
) -> None:
    """The same entry against every rule (each with its own clock reads), as put_events delivers it."""
    hot_paths.apply()
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
    hot_paths.apply()
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
