"""botocore's event names are aliased once per process on the local cloud, as botocore aliases them."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from botocore import hooks
from hypothesis import example, given
from hypothesis import strategies as st

from intentbus_local import event_aliases


def test_the_code_the_shared_aliases_stand_in_for_is_the_code_it_was_written_against() -> None:
    assert event_aliases.PINS.changed() == [], (
        f"botocore changed code the local cloud replaces (found on {event_aliases.PINS.found_on}): "
        "compare intentbus_local.event_aliases with it, then update its digest"
    )


_aliased = sorted(hooks.EVENT_ALIASES)
_part = st.one_of(
    st.sampled_from(_aliased),
    st.sampled_from([part for name in _aliased for part in name.split(".")]),
    st.sampled_from(["before-call", "after-call", "dynamodb", "PutItem", "*", ""]),
)
_name = st.lists(_part, min_size=1, max_size=4).map(".".join)


def _botocore_s(name: str, aliases: dict[str, str] | None = None) -> str:
    aliaser = hooks.EventAliaser(hooks.HierarchicalEmitter(), aliases)
    answer: str = event_aliases.PINS.moto_original("EventAliaser._alias_event_name")(aliaser, name)
    return answer


class _Counting(hooks.EventAliaser):
    """botocore's aliaser, counting the names it works out."""

    worked_out: ClassVar[list[str]] = []

    def _alias_event_name(self, event_name: str) -> str:
        self.worked_out.append(event_name)
        return _botocore_s(event_name, self._event_aliases)  # type: ignore[attr-defined]


@given(names=st.lists(_name, max_size=6))
@example(names=["before-call.api.sagemaker.Foo", "before-call.api.sagemaker.Foo", "x.autoscaling.y"])
def test_each_client_s_aliaser_answers_what_botocore_s_answers(names: list[str]) -> None:
    """The same name, from fresh aliasers in turn (the shared answers included) and from one."""
    shared = event_aliases._alias_event_name_for(hooks.EventAliaser)
    one = hooks.EventAliaser(hooks.HierarchicalEmitter())
    for name in names:
        fresh = hooks.EventAliaser(hooks.HierarchicalEmitter())
        assert shared(fresh, name) == _botocore_s(name) == fresh._alias_name_cache[name]  # type: ignore[attr-defined]
        assert shared(one, name) == _botocore_s(name)


def test_a_name_is_worked_out_once_for_all_aliasers_using_botocore_s_aliases() -> None:
    """Made afresh, or copied as each client copies its session's (with a copy of the aliases)."""
    _Counting.worked_out = []
    shared = event_aliases._alias_event_name_for(_Counting)
    session_s = _Counting(hooks.HierarchicalEmitter())
    for aliaser in (session_s, copy.copy(session_s), copy.copy(session_s)):
        assert shared(aliaser, "before-call.api.sagemaker.Foo") == "before-call.sagemaker.Foo"
        assert shared(aliaser, "after-call.dynamodb.PutItem") == "after-call.dynamodb.PutItem"
    assert _Counting.worked_out == ["before-call.api.sagemaker.Foo", "after-call.dynamodb.PutItem"]


def test_other_aliases_or_changed_ones_are_worked_out_by_botocore_each_time(monkeypatch: Any) -> None:
    _Counting.worked_out = []
    shared = event_aliases._alias_event_name_for(_Counting)
    own = {"dynamodb": "ddb"}
    for _ in range(2):
        aliaser = _Counting(hooks.HierarchicalEmitter(), own)
        assert shared(aliaser, "before-call.dynamodb.X") == "before-call.ddb.X"
    monkeypatch.setitem(hooks.EVENT_ALIASES, "sqs", "queues")
    for _ in range(2):
        assert shared(_Counting(hooks.HierarchicalEmitter()), "before-call.sqs.X") == "before-call.queues.X"
    assert len(_Counting.worked_out) == 4


def test_the_local_cloud_s_hot_paths_install_it_for_clients_aliasers() -> None:
    """A client's aliaser holds a copy of botocore's aliases: equal, so it takes the shared answers."""
    import boto3

    from intentbus_local import hot_paths

    hot_paths.apply()
    assert vars(hooks.EventAliaser)["_alias_event_name"] is not event_aliases.PINS.moto_original(
        "EventAliaser._alias_event_name"
    )
    client = boto3.session.Session(region_name="us-east-1").client("sqs")
    events: Any = client.meta.events
    aliases = events._event_aliases
    assert aliases is not hooks.EVENT_ALIASES
    assert aliases == hooks.EVENT_ALIASES
