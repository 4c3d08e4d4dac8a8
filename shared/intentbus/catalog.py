"""The registered workflows and every type they declare, with the pipeline's own facts."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from intentbus.definition import CommandSpec, Step, Workflow
from intentbus.errors import ConfigurationError
from intentbus.facts import PIPELINE_TYPE_NAMES, pipeline_type
from intentbus.registry import TypeRegistry


class Catalog:
    def __init__(self, workflows: Iterable[Workflow]) -> None:
        self.workflows: dict[str, Workflow] = {}
        self.types = TypeRegistry(deferred=dict.fromkeys(PIPELINE_TYPE_NAMES, pipeline_type))
        self._owner_of_type: dict[str, Workflow] = {}
        for workflow in workflows:
            problems = workflow.problems()
            if problems:
                raise ConfigurationError(f"workflow {workflow.name!r}: " + "; ".join(problems))
            if workflow.name in self.workflows:
                raise ConfigurationError(f"workflow {workflow.name!r} is registered twice")
            self.workflows[workflow.name] = workflow
            for spec in workflow.type_specs():
                self.types.add(spec)
                self._owner_of_type[spec.name] = workflow

    @classmethod
    def from_modules(cls, spec: str) -> Catalog:
        """``spec`` is a comma-separated list of ``module`` or ``module:attribute`` (default ``workflow``)."""
        workflows: list[Workflow] = []
        for item in (part.strip() for part in spec.split(",")):
            if not item:
                continue
            module_name, _, attribute = item.partition(":")
            try:
                module = importlib.import_module(module_name)
            except ImportError as error:
                raise ConfigurationError(f"cannot import workflow module {module_name!r}: {error}") from error
            workflow = getattr(module, attribute or "workflow", None)
            if not isinstance(workflow, Workflow):
                raise ConfigurationError(f"{item!r} does not name an intentbus Workflow")
            workflows.append(workflow)
        if not workflows:
            raise ConfigurationError("no workflows registered (INTENTBUS_WORKFLOWS is empty)")
        return cls(workflows)

    def check_receives(self, max_receive_count: int | None) -> None:
        """A command may not be retried more often than its queue delivers a message before its DLQ:
        ``MaxReceiveCount`` (``INTENTBUS_MAX_RECEIVE_COUNT``) must be at least every ``max_attempts``."""
        if max_receive_count is None:
            return
        over = [
            f"{workflow.name}.{spec.name} ({spec.retry.max_attempts})"
            for workflow in self.workflows.values()
            for spec in workflow.commands.values()
            if spec.retry.max_attempts > max_receive_count
        ]
        if over:
            raise ConfigurationError(
                f"MaxReceiveCount {max_receive_count} is below the retry max_attempts of "
                f"{', '.join(over)}: raise the template parameter MaxReceiveCount or lower max_attempts"
            )

    def workflow(self, name: str) -> Workflow:
        try:
            return self.workflows[name]
        except KeyError:
            raise ConfigurationError(f"workflow {name!r} is not registered") from None

    def retired(self, workflow: str, definition_version: str) -> str | None:
        """Why a run of ``workflow`` started under ``definition_version`` cannot go on in this
        deployment (a redeploy removed the workflow, or registered another version of it); ``None``
        when it can. Two versions of one workflow never run side by side."""
        registered = self.workflows.get(workflow)
        if registered is None:
            return f"workflow {workflow!r} is not registered in this deployment"
        if registered.version != definition_version:
            return (
                f"the run started under version {definition_version!r} of workflow {workflow!r}; "
                f"this deployment has version {registered.version!r} only"
            )
        return None

    def owner(self, type_name: str) -> Workflow | None:
        return self._owner_of_type.get(type_name)

    def step(self, workflow: str, on: str) -> Step | None:
        return self.workflow(workflow).steps.get(on)

    def command(self, type_name: str) -> CommandSpec | None:
        owner = self.owner(type_name)
        return None if owner is None else owner.commands.get(type_name)
