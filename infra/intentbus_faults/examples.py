"""What drives the schedules of the workflows under test: the seed workflows' own generators, and
every other workflow's sample inputs (``Workflow.examples``, or a file of envelopes)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from intentbus.catalog import Catalog
from intentbus.definition import Workflow
from intentbus.errors import ConfigurationError
from intentbus.workflows import direct_tool, incident
from intentbus_faults import fanout_workflow
from intentbus_faults.schedule import Drive, Example

SEED_WORKFLOWS: tuple[Workflow, ...] = (incident.workflow, direct_tool.workflow, fanout_workflow.workflow)
"""Driven by the schedule's built-in generators (approval plans, fan-out lines, direct calls)."""


def drive_for(catalog: Catalog, events: Iterable[tuple[str, Mapping[str, Any]]] = ()) -> Drive:
    """The drive for ``catalog``; ``events`` are (where, envelope) of extra sample inputs.

    Raises ``ConfigurationError`` (one line) for a sample that starts no workflow under test, or a
    workflow that is not a seed workflow and has no sample input at all."""
    seeded = frozenset(w.name for w in catalog.workflows.values() if any(w is s for s in SEED_WORKFLOWS))
    examples: list[Example] = []
    for workflow in catalog.workflows.values():
        for number, envelope in enumerate(workflow.examples, start=1):
            examples.append(_example(catalog, f"{workflow.name}.examples[{number}]", envelope))
    examples += [_example(catalog, where, envelope) for where, envelope in events]
    driven = seeded | {example.workflow for example in examples}
    missing = sorted(set(catalog.workflows) - driven)
    if missing:
        raise ConfigurationError(
            f"no sample input for workflow(s) {', '.join(missing)}: give the definition "
            "examples=(<envelope>, ...) or pass --events FILE"
        )
    return Drive(seeded=seeded, examples=tuple(examples))


def _example(catalog: Catalog, where: str, envelope: Mapping[str, Any]) -> Example:
    if not isinstance(envelope, Mapping):
        raise ConfigurationError(f"{where}: a sample input is a JSON object (an envelope)")
    type_name = envelope.get("type") or envelope.get("event_type")
    owner = catalog.owner(str(type_name)) if type_name else None
    if owner is None or type_name not in owner.starts_on:
        raise ConfigurationError(f"{where}: type {type_name!r} starts none of the workflows under test")
    if not isinstance(envelope.get("tenant_id"), str):
        raise ConfigurationError(f"{where}: a sample input needs its tenant_id")
    return Example(workflow=owner.name, envelope=dict(envelope))
