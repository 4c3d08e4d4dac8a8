"""The seed's backoff as SQS visibility, and the retry policy a workflow declares for its commands."""

from __future__ import annotations

import pytest

from intentbus.backoff import SQS_MAX_VISIBILITY_SECONDS, visibility_seconds
from intentbus.catalog import Catalog
from intentbus.config import Settings
from intentbus.definition import RepeatSafety, RetryPolicy, Workflow, tool
from intentbus.errors import ConfigurationError
from intentbus.policy import Policy
from intentbus.registry import Payload
from intentbus.retries import Delivery
from intentbus_faults.retry_schedule import retries_keep_their_schedule
from intentbus_local.poller import Delivered


class Nudge(Payload):
    target: str


@tool(repeat_safety=RepeatSafety.SAFE)
def nudge(command: Nudge, context: object) -> dict[str, str]:
    return {"target": command.target}


def workflow_with(retry: RetryPolicy, name: str = "nudging") -> Workflow:
    workflow = Workflow(name=name, version="1", policy=Policy(rules=()))
    workflow.command("Nudge", Nudge, tool=nudge, retry=retry)
    return workflow


def test_the_default_schedule_doubles_from_the_base_to_the_cap_with_no_jitter() -> None:
    policy = RetryPolicy()
    waits = [
        visibility_seconds(n, base=policy.base_seconds, cap=policy.cap_seconds, jitter=lambda: 0.0)
        for n in range(1, 9)
    ]
    assert waits == [30, 60, 120, 240, 480, 900, 900, 900]


def test_bounded_jitter_adds_up_to_one_base_and_never_retries_sooner_than_the_floor() -> None:
    highest = [visibility_seconds(n, base=30, cap=900, jitter=lambda: 0.9999) for n in (1, 2, 6)]
    assert highest == [60, 90, 930]
    lowest = [visibility_seconds(n, base=30, cap=900, jitter=lambda: 0.0) for n in (1, 2, 6)]
    assert lowest == [30, 60, 900]


def test_a_wait_is_whole_seconds_within_sqs_twelve_hours() -> None:
    assert visibility_seconds(1, base=1.5, cap=10, jitter=lambda: 0.1) == 2  # 1.65 rounded up
    assert visibility_seconds(40, base=3600, cap=86_400, jitter=lambda: 0.5) == SQS_MAX_VISIBILITY_SECONDS


@pytest.mark.parametrize(
    ("policy", "problem"),
    [
        (RetryPolicy(base_seconds=0), "base_seconds must be at least 1"),
        (RetryPolicy(base_seconds=60, cap_seconds=30), "at most cap_seconds"),
        (RetryPolicy(base_seconds=60, cap_seconds=43_200), "at most 43200 s"),
        (RetryPolicy(max_attempts=0), "max_attempts must be at least 1"),
    ],
)
def test_a_bad_policy_is_refused_when_the_catalog_loads_in_one_line(
    policy: RetryPolicy, problem: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        Catalog([workflow_with(policy)])
    message = str(refused.value)
    assert problem in message
    assert "command 'Nudge'" in message
    assert "\n" not in message


def test_max_receive_count_must_cover_every_commands_attempts() -> None:
    catalog = Catalog([workflow_with(RetryPolicy(max_attempts=8))])
    catalog.check_receives(None)
    catalog.check_receives(8)
    with pytest.raises(ConfigurationError) as refused:
        catalog.check_receives(5)
    assert str(refused.value) == (
        "MaxReceiveCount 5 is below the retry max_attempts of nudging.Nudge (8): raise the template "
        "parameter MaxReceiveCount or lower max_attempts"
    )


def test_the_seed_workflows_fit_the_templates_default_max_receive_count() -> None:
    catalog = Catalog.from_modules("intentbus.workflows.incident,intentbus.workflows.direct_tool")
    catalog.check_receives(5)


def test_the_max_receive_count_comes_from_the_environment() -> None:
    base = {
        "WORKFLOW_TABLE": "t",
        "EVENT_BUS_NAME": "b",
        "QUARANTINE_QUEUE_URL": "q",
        "INTENTBUS_ENVIRONMENT": "dev",
        "INTENTBUS_WORKFLOWS": "w",
    }
    assert Settings.from_env(base).intentbus_max_receive_count is None
    assert Settings.from_env({**base, "INTENTBUS_MAX_RECEIVE_COUNT": "7"}).intentbus_max_receive_count == 7
    with pytest.raises(ConfigurationError, match="INTENTBUS_MAX_RECEIVE_COUNT"):
        Settings.from_env({**base, "INTENTBUS_MAX_RECEIVE_COUNT": "0"})


@pytest.mark.parametrize(
    ("attributes", "count", "last"),
    [
        ({"ApproximateReceiveCount": "1"}, 1, False),
        ({"ApproximateReceiveCount": "4"}, 4, False),
        ({"ApproximateReceiveCount": "5"}, 5, True),
        ({"ApproximateReceiveCount": "9"}, 9, True),
        ({"ApproximateReceiveCount": "junk"}, 1, False),
        ({}, 1, False),
    ],
)
def test_a_delivery_knows_whether_it_is_the_queues_last(
    attributes: dict[str, str], count: int, last: bool
) -> None:
    delivery = Delivery.of({"attributes": attributes}, 5)
    assert (delivery.receive_count, delivery.last) == (count, last)
    assert not Delivery.of({"attributes": attributes}, None).last


def delivered(count: int, at: float, *, delay: int | None, visible_at: float | None) -> Delivered:
    return Delivered(
        queue_url="https://sqs/123/execute",
        message_id="m-1",
        receive_count=count,
        at=at,
        failed=visible_at is not None,
        delay_seconds=delay,
        visible_at=visible_at,
    )


def test_the_retry_schedule_invariant_passes_a_schedule_kept_and_names_a_retry_too_soon() -> None:
    policies = [RetryPolicy()]
    kept = [
        delivered(1, 0.0, delay=45, visible_at=45.0),
        delivered(2, 45.2, delay=70, visible_at=115.2),
        delivered(3, 115.3, delay=None, visible_at=None),
    ]
    assert retries_keep_their_schedule(kept, policies) == []
    too_soon = [delivered(1, 0.0, delay=45, visible_at=45.0), delivered(2, 20.0, delay=None, visible_at=None)]
    assert retries_keep_their_schedule(too_soon, policies) == [
        "(j/retry-too-soon) execute m-1: delivery 2 came 20.0 s after delivery 1 failed; its schedule "
        "allowed it after 45.0 s"
    ]
    below = [delivered(2, 0.0, delay=10, visible_at=10.0)]
    assert retries_keep_their_schedule(below, policies) == [
        "(j/backoff-below-floor) execute m-1: attempt 2 failed and set a 10 s wait, below the policy's 60 s"
    ]


def test_a_lapsed_delivery_noted_after_the_redelivery_it_let_in_is_no_retry_too_soon() -> None:
    # Delivery 1's visibility lapsed while its handler ran; delivery 2 came in, failed with a backoff
    # and was noted first. Delivery 1 is still the earlier one: its lapse set no schedule.
    noted_as_handlers_returned = [
        delivered(2, 31.0, delay=180, visible_at=211.0),
        delivered(1, 0.0, delay=None, visible_at=None),
    ]
    assert retries_keep_their_schedule(noted_as_handlers_returned, [RetryPolicy()]) == []
