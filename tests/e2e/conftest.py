"""End-to-end: the whole template on moto's server (127.0.0.1, a free port), all five real stages."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus_local import seed
from intentbus_local.cloud import LocalCloud


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[LocalCloud]:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    with LocalCloud(mode="server", logs_dir=tmp_path / "logs") as running:
        yield running


@pytest.fixture
def store(cloud: LocalCloud) -> DynamoWorkflowStore:
    return DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())


@contextmanager
def waiting_in_production(tmp_path: Path, *, workflows: str | None = None) -> Iterator[LocalCloud]:
    """A local cloud whose incident run in production waits for the scale-up's approval."""
    parameters = {"Environment": "production", **({"Workflows": workflows} if workflows else {})}
    with LocalCloud(mode="server", logs_dir=tmp_path / "logs", parameters=parameters) as cloud:
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        event = seed.latency_event(environment="production")
        cloud.put_events(
            [{"Source": "monitoring.example", "DetailType": event["type"], "Detail": json.dumps(event)}]
        )
        cloud.run_until_idle(max_invocations=100)
        yield cloud
