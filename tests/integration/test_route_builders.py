"""werkzeug's URL builders compiled on first use (intentbus_local.route_builders): pinned to the werkzeug
source it relies on, and building every URL, or raising, as werkzeug's own builders do."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from werkzeug.routing import Map
from werkzeug.routing.rules import Rule

from intentbus_local import route_builders

SERVICES = ("lambda", "s3", "cloudformation", "apigateway", "iam", "logs")


def test_werkzeug_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    assert route_builders.PINS.changed() == [], (
        f"werkzeug changed code the local cloud replaces (found on {route_builders.PINS.found_on}): compare "
        "the replacement with werkzeug's new code, then update its digest"
    )


def _rules(service: str) -> list[Rule]:
    """The rules of moto's REST router for ``service`` (none for a service of another protocol)."""
    from moto.core.routing import RestRouter
    from moto.core.utils import get_service_model

    model = get_service_model(service)
    if model.protocol not in ("rest-json", "rest-xml"):
        return []
    return list(RestRouter(model)._map.iter_rules())


def _built(rules: list[Rule], values: dict[str, str], append_unknown: bool) -> list[Any]:
    built: list[Any] = []
    for rule in rules:
        try:
            built.append(rule.build({**dict.fromkeys(rule.arguments, "v"), **values}, append_unknown))
        except Exception as error:  # the outcome compared is the exception's type
            built.append(type(error).__name__)
    return built


@pytest.fixture(scope="module")
def eager_and_lazy() -> tuple[list[Rule], list[Rule]]:
    """The same rules of moto's REST services, bound to maps with werkzeug's own builders and with the
    builders compiled on first use."""
    from moto.core.routing import RestRouter  # noqa: F401  (moto's routing imported before the swap)

    moto_s = route_builders.PINS.moto_original("Rule._compile_builder")
    current = vars(Rule)["_compile_builder"]
    setattr(Rule, "_compile_builder", moto_s)  # noqa: B010
    try:
        eager = [rule for service in SERVICES for rule in _rules(service)]
    finally:
        setattr(Rule, "_compile_builder", current)  # noqa: B010
    route_builders.apply()
    lazy = [rule for service in SERVICES for rule in _rules(service)]
    assert vars(lazy[0])["_build"] is not None
    return eager, lazy


@settings(deadline=None, max_examples=40)
@given(
    values=st.dictionaries(
        st.sampled_from(["Bucket", "Key", "FunctionName", "x", "versionId"]), st.text(max_size=5)
    ),
    append_unknown=st.booleans(),
)
def test_every_rule_builds_what_werkzeug_s_own_builder_builds(
    eager_and_lazy: tuple[list[Rule], list[Rule]], values: dict[str, str], append_unknown: bool
) -> None:
    eager, lazy = eager_and_lazy
    assert [rule.rule for rule in eager] == [rule.rule for rule in lazy]
    assert len(eager) > 200
    assert _built(lazy, values, append_unknown) == _built(eager, values, append_unknown)


def test_no_builder_is_compiled_until_a_url_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails when binding a rule to a map compiles its builders, as werkzeug's own compile does."""
    route_builders.apply()
    compiled: list[bool] = []
    moto_s = route_builders.PINS.moto_original("Rule._compile_builder")

    def counted(rule: Any, append_unknown: bool = True) -> Any:
        compiled.append(append_unknown)
        return moto_s(rule, append_unknown)

    monkeypatch.setitem(route_builders.PINS.replaced, "Rule._compile_builder", counted)
    rules = [Rule("/a/<b>", endpoint="a"), Rule("/c", endpoint="c")]
    adapter = Map(rules).bind("example.com")
    assert compiled == []
    assert adapter.build("a", {"b": "x", "q": "1"}) == "/a/x?q=1"
    assert adapter.build("a", {"b": "y"}) == "/a/y"
    assert compiled == [True]  # the builder that appends unknown values, compiled once
    assert rules[0].build({"b": "z", "q": "1"}, append_unknown=False) == ("", "/a/z")
    assert compiled == [True, False]
