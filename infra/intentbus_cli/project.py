"""The project a command works in: its template (``--template``) and workflow modules (``--workflows``).

The template is ``--template PATH``, else ``./template.yaml``, else the seed template shipped with the
package (``intentbus_local/seed_project``: the seed workflows, what ``intentbus demo`` runs). The
project's directory (the template's; the working directory with the seed template) goes first on
``sys.path``, so a project's own workflow modules import by name.

The workflows are ``--workflows``, else ``$INTENTBUS_WORKFLOWS``, else the default of the template's
``Workflows`` parameter. Either of the first two *replaces* that list (the local cloud deploys with
``Workflows`` set to it): keep the seed workflows next to yours by naming them too, e.g.
``--workflows orders,intentbus.workflows.incident``. Each item is ``module`` (its ``workflow``
attribute) or ``module:attribute``.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from intentbus.errors import ConfigurationError

TEMPLATE_FILE = "template.yaml"
WORKFLOWS_VARIABLE = "INTENTBUS_WORKFLOWS"
WORKFLOWS_PARAMETER = "Workflows"


@dataclass(frozen=True)
class Project:
    template: Path
    root: Path
    workflows: str
    seeded: bool
    """True when no template was given and none is in the working directory: the seed template runs."""


def add_project_arguments(parser: argparse.ArgumentParser) -> None:
    """Gives every command under ``parser`` ``--template`` and ``--workflows`` (where it has none).

    Added with a suppressed default, so a leaf's option never hides the same option given to its parent
    command (``intentbus approvals --workflows X list``)."""
    children = _subcommands(parser)
    for child in children:
        add_project_arguments(child)
    if children:
        return
    options = parser._option_string_actions
    if "--template" not in options:
        parser.add_argument(
            "--template",
            type=Path,
            default=argparse.SUPPRESS,
            help="the project's SAM template (default ./template.yaml, else the seed template)",
        )
    if "--workflows" not in options:
        parser.add_argument("--workflows", default=argparse.SUPPRESS, help=WORKFLOWS_HELP)


WORKFLOWS_HELP = (
    "comma-separated workflow modules, 'module' or 'module:attribute'; replaces the template's Workflows "
    f"default (default: ${WORKFLOWS_VARIABLE}, else the template's Workflows default)"
)


def _subcommands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found: dict[int, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found[id(child)] = child
    return list(found.values())


def resolve(template: Path | None, workflows: str | None) -> Project:
    """The project of the given options; puts its directory first on ``sys.path``."""
    seeded = False
    if template is not None:
        if not template.is_file():
            raise ConfigurationError(f"no template at {template}")
        path = template.resolve()
        root = path.parent
    elif Path(TEMPLATE_FILE).is_file():
        path = Path(TEMPLATE_FILE).resolve()
        root = path.parent
    else:
        path = seed_template()
        root = Path.cwd().resolve()
        seeded = True
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    chosen = workflows or os.environ.get(WORKFLOWS_VARIABLE) or template_workflows(path)
    return Project(template=path, root=root, workflows=chosen, seeded=seeded)


def seed_template() -> Path:
    from intentbus_local.template import default_template_path

    return default_template_path()


def template_workflows(path: Path) -> str:
    """The default of the template's ``Workflows`` parameter; one clear line when it has none."""
    try:
        parameter = read_parameters(path).get(WORKFLOWS_PARAMETER, {})
    except (OSError, yaml.YAMLError) as error:
        raise ConfigurationError(f"cannot read {path}: {error}") from error
    default = parameter.get("Default") if isinstance(parameter, dict) else None
    if not isinstance(default, str) or not default.strip():
        raise ConfigurationError(
            f"{path} has no default for its {WORKFLOWS_PARAMETER} parameter: pass --workflows"
        )
    return default


def read_parameters(path: Path) -> dict[str, Any]:
    loaded = yaml.load(path.read_text(encoding="utf-8"), Loader=_TemplateLoader)
    parameters = loaded.get("Parameters", {}) if isinstance(loaded, dict) else {}
    return parameters if isinstance(parameters, dict) else {}


class _TemplateLoader(yaml.SafeLoader):
    """A safe loader that reads CloudFormation's short-form intrinsics (``!Ref X``) as plain values."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)  # type: ignore[arg-type]


_TemplateLoader.add_multi_constructor("!", _intrinsic)
