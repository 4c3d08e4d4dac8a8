"""End-to-end: the whole template on moto's server (127.0.0.1, a free port), all five real stages."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
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
