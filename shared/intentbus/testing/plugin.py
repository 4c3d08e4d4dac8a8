"""The pytest plugin (entry point ``pytest11: intentbus``): fixtures for testing a project's workflows.

* ``intentbus_pipeline``: an ``InMemoryPipeline`` over the project's workflows;
* ``intentbus_cloud``: a ``CloudPipeline``, the project's template on the local cloud (moto, in this
  process), started for the test and stopped after it.

ini options: ``intentbus_template`` (default ``template.yaml`` in the rootdir) and
``intentbus_workflows`` (default: the template's ``Workflows`` parameter default). The project's
directory (the rootdir) is put on ``sys.path`` so its workflow modules import.

Importing this module imports nothing of intentbus's pipeline, moto or boto3: pytest loads it in every
run of any project where intentbus is installed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from intentbus.testing.project import DEFAULT_TEMPLATE, Project, ProjectError, project

if TYPE_CHECKING:
    from intentbus.testing.cloud import CloudPipeline
    from intentbus.testing.pipeline import InMemoryPipeline

TEMPLATE_OPTION = "intentbus_template"
WORKFLOWS_OPTION = "intentbus_workflows"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        TEMPLATE_OPTION, "the project's SAM template, relative to the rootdir", default=DEFAULT_TEMPLATE
    )
    parser.addini(
        WORKFLOWS_OPTION,
        "comma-separated workflow modules (default: the template's Workflows parameter default)",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    directory = str(_project(config).directory)
    if directory not in sys.path:
        sys.path.insert(0, directory)


def _project(config: pytest.Config) -> Project:
    return project(
        Path(config.rootpath), str(config.getini(TEMPLATE_OPTION)), str(config.getini(WORKFLOWS_OPTION))
    )


@pytest.fixture(scope="session")
def intentbus_project(pytestconfig: pytest.Config) -> Project:
    """The project's template and workflow modules, as the ini options say."""
    return _project(pytestconfig)


@pytest.fixture
def intentbus_pipeline(intentbus_project: Project) -> InMemoryPipeline:
    from intentbus.catalog import Catalog
    from intentbus.errors import ConfigurationError
    from intentbus.testing.pipeline import InMemoryPipeline

    try:
        catalog = Catalog.from_modules(intentbus_project.workflows)
    except (ProjectError, ConfigurationError) as error:
        pytest.fail(f"intentbus_pipeline: {error}", pytrace=False)
    return InMemoryPipeline(catalog)


@pytest.fixture
def intentbus_cloud(intentbus_project: Project, tmp_path: Path) -> Iterator[CloudPipeline]:
    try:
        from intentbus.testing.cloud import CloudPipeline
    except ImportError as error:
        pytest.fail(
            f"intentbus_cloud needs the local extra (pip install intentbus[local]): {error}", pytrace=False
        )
    template = intentbus_project.template
    if not template.is_file():
        pytest.fail(
            f"intentbus_cloud: no template at {template} (set {TEMPLATE_OPTION} in the ini)", pytrace=False
        )
    with CloudPipeline.start(
        intentbus_project.template,
        workflows=intentbus_project.configured_workflows,
        logs_dir=tmp_path / "intentbus-logs",
    ) as cloud:
        yield cloud
