"""What users test their own workflows with: the pipeline in memory, its fakes, a virtual clock, and a
pytest plugin (``intentbus.testing.plugin``) with the ``intentbus_pipeline`` and ``intentbus_cloud``
fixtures. Tooling: never shipped in the Lambda layer, never imported by the runtime.

Names load on first use, so the pytest plugin (which imports this package) costs nothing at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intentbus.testing.bodies import DEFAULT_SOURCE, bus_body, producer_body
    from intentbus.testing.clients import ClientMap, MissingClient, NoClients
    from intentbus.testing.clock import VirtualClock
    from intentbus.testing.cloud import CloudPipeline
    from intentbus.testing.fakes import InMemoryRunner, InMemoryStore, ListQuarantine, RecordingBus
    from intentbus.testing.pipeline import InMemoryPipeline, PipelineDidNotSettle, Quarantined
    from intentbus.testing.routing import route
    from intentbus.testing.timeline import TimelineEntry

_HOMES = {
    "DEFAULT_SOURCE": "bodies",
    "bus_body": "bodies",
    "producer_body": "bodies",
    "ClientMap": "clients",
    "MissingClient": "clients",
    "NoClients": "clients",
    "VirtualClock": "clock",
    "CloudPipeline": "cloud",
    "InMemoryRunner": "fakes",
    "InMemoryStore": "fakes",
    "ListQuarantine": "fakes",
    "RecordingBus": "fakes",
    "InMemoryPipeline": "pipeline",
    "PipelineDidNotSettle": "pipeline",
    "Quarantined": "pipeline",
    "route": "routing",
    "TimelineEntry": "timeline",
}

__all__ = [
    "DEFAULT_SOURCE",
    "ClientMap",
    "CloudPipeline",
    "InMemoryPipeline",
    "InMemoryRunner",
    "InMemoryStore",
    "ListQuarantine",
    "MissingClient",
    "NoClients",
    "PipelineDidNotSettle",
    "Quarantined",
    "RecordingBus",
    "TimelineEntry",
    "VirtualClock",
    "bus_body",
    "producer_body",
    "route",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
