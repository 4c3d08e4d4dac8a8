"""A workflow's allow-list answers as the plain pattern scan does, its answers kept only for the very
patterns they were made from (a mapping replaced or changed in place is asked afresh)."""

from __future__ import annotations

import fnmatch

from hypothesis import given, settings
from hypothesis import strategies as st

from intentbus import definition
from intentbus.definition import Workflow
from intentbus.policy import Policy

_patterns = st.lists(
    st.sampled_from(["ecs:shop/*", "ecs:shop/a", "ecs:*", "s3:b?", "*", "ecs:other/*"]), max_size=3
)
_resources = st.sampled_from(["ecs:shop/a", "ecs:shop/b", "ecs:other/a", "s3:b1", "s3:bb", "x"])
_tenants = st.sampled_from(["acme", "globex", "*"])


def _scanned(resources: dict[str, tuple[str, ...]] | None, tenant_id: str, resource: str) -> bool:
    if resources is None:
        return True
    patterns = (*resources.get(tenant_id, ()), *resources.get("*", ()))
    return any(fnmatch.fnmatchcase(resource, pattern) for pattern in patterns)


@settings(max_examples=300)
@given(
    st.none() | st.dictionaries(_tenants, _patterns.map(tuple), max_size=3),
    st.lists(st.tuples(_tenants, _resources), min_size=1, max_size=6),
)
def test_the_allow_list_answers_as_the_scan(
    resources: dict[str, tuple[str, ...]] | None, asked: list[tuple[str, str]]
) -> None:
    workflow = Workflow(name="w", version="1", policy=Policy(), tenant_resources=resources)
    for tenant_id, resource in asked * 2:  # asked again: the kept answers
        assert workflow.allows_resource(tenant_id, resource) is _scanned(resources, tenant_id, resource)


def test_patterns_changed_in_place_or_replaced_are_asked_afresh() -> None:
    resources = {"acme": ("ecs:shop/*",)}
    workflow = Workflow(name="w", version="1", policy=Policy(), tenant_resources=resources)
    assert workflow.allows_resource("acme", "ecs:shop/a")
    resources["acme"] = ("ecs:other/*",)  # a tenant's access taken away in place
    assert not workflow.allows_resource("acme", "ecs:shop/a")
    assert workflow.allows_resource("acme", "ecs:other/a")
    workflow.tenant_resources = {"*": ("ecs:shop/*",)}
    assert workflow.allows_resource("acme", "ecs:shop/a")
    assert not workflow.allows_resource("acme", "ecs:other/a")


def test_patterns_of_another_type_are_not_kept() -> None:
    patterns = ["ecs:shop/*"]
    workflow = Workflow(name="w", version="1", policy=Policy(), tenant_resources={"acme": patterns})  # type: ignore[dict-item]
    assert workflow.allows_resource("acme", "ecs:shop/a")
    patterns[0] = "ecs:other/*"  # a list can change under a kept answer: none is kept for it
    assert not workflow.allows_resource("acme", "ecs:shop/a")


def test_the_answers_kept_stay_bounded() -> None:
    workflow = Workflow(name="w", version="1", policy=Policy(), tenant_resources={"*": ("ecs:*",)})
    for n in range(definition._MATCHED_KEPT + 10):
        assert workflow.allows_resource("acme", f"ecs:shop/{n}")
    assert 0 < len(definition._MATCHED) <= definition._MATCHED_KEPT
