"""A user's project as the pytest plugin finds it: its template, and the workflow modules it deploys."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TEMPLATE = "template.yaml"
WORKFLOWS_PARAMETER = "Workflows"


class ProjectError(Exception):
    """The project's configuration cannot be read; the message says what to change."""


@dataclass(frozen=True)
class Project:
    """A user's project as the pytest plugin found it: its directory, template and workflow modules."""

    directory: Path
    """The rootdir: where the workflow modules import from."""
    template: Path
    configured_workflows: str | None = None
    """The ``intentbus_workflows`` ini option, when set: it overrides the template's default."""

    @property
    def workflows(self) -> str:
        """The workflow modules: the ini option, else the template's ``Workflows`` default."""
        if self.configured_workflows:
            return self.configured_workflows
        return workflows_default(self.template)


def project(rootdir: Path, template: str | None, workflows: str | None) -> Project:
    path = Path(template or DEFAULT_TEMPLATE)
    return Project(rootdir.resolve(), (rootdir / path).resolve(), (workflows or "").strip() or None)


def workflows_default(template: Path) -> str:
    parameters = read_template(template).get("Parameters")
    parameter = parameters.get(WORKFLOWS_PARAMETER) if isinstance(parameters, dict) else None
    default = parameter.get("Default") if isinstance(parameter, dict) else None
    if not isinstance(default, str) or not default.strip():
        raise ProjectError(
            f"{template} declares no default for its {WORKFLOWS_PARAMETER} parameter: set the "
            "intentbus_workflows ini option (comma-separated workflow modules)"
        )
    return default.strip()


def read_template(template: Path) -> dict[str, Any]:
    """The template's YAML, CloudFormation's short-form tags (``!Ref``, ``!Sub``...) read as plain values."""
    try:
        import yaml
    except ImportError:
        raise ProjectError(
            "reading template.yaml needs PyYAML (install intentbus[local]), or set the intentbus_workflows "
            "ini option"
        ) from None

    class Loader(yaml.SafeLoader):
        pass

    def any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        assert isinstance(node, yaml.MappingNode)
        return loader.construct_mapping(node)

    Loader.add_multi_constructor("!", any_tag)
    try:
        text = template.read_text(encoding="utf-8")
    except OSError as error:
        raise ProjectError(
            f"cannot read the template {template}: {error.strerror or error} (set the intentbus_template "
            "ini option to its path, relative to the rootdir)"
        ) from None
    try:
        loaded = yaml.load(text, Loader=Loader)
    except yaml.YAMLError as error:
        raise ProjectError(f"{template} is not YAML: {str(error).splitlines()[0]}") from None
    if not isinstance(loaded, dict):
        raise ProjectError(f"{template} is not a template (a YAML mapping)")
    return loaded
