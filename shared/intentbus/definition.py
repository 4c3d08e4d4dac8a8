"""The public API a workflow is written in: types, agents, tools, steps, budgets and policy."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from intentbus.envelope import Kind
from intentbus.policy import Policy
from intentbus.registry import TypeSpec


class TokenUsage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


class ProposedCommand(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str
    payload: dict[str, Any]


class Decision(BaseModel):
    """An agent's proposal: never an action. Policy decides whether any of it may run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    commands: tuple[ProposedCommand, ...] = Field(min_length=1)
    rationale: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    confidence: float = Field(ge=0.0, le=1.0)
    tokens: TokenUsage = Field(default_factory=TokenUsage)


@dataclass(frozen=True)
class DecisionContext:
    """What an agent is shown: the triggering event and the workflow's position, not the whole log."""

    workflow: str
    tenant_id: str
    run_id: str
    step_index: int
    event_type: str
    event: BaseModel
    environment: str


class Agent(Protocol):
    @property
    def name(self) -> str: ...

    def decide(self, context: DecisionContext) -> Decision: ...


@dataclass(frozen=True)
class ScriptedAgent:
    """A deterministic agent: a plain function from context to decision (demo, tests, rules)."""

    name: str
    script: Callable[[DecisionContext], Decision]

    def decide(self, context: DecisionContext) -> Decision:
        return self.script(context)


class RepeatSafety(StrEnum):
    """Whether running a tool a second time for one command is harmless."""

    SAFE = "safe"
    """Idempotent by nature (reads, absolute sets) or the target dedups on the idempotency key."""
    RECONCILE = "reconcile"
    """Not safe to repeat blindly: an unknown outcome must be reconciled first."""


class ToolError(Exception):
    """A tool's failure. ``retryable`` errors are retried by the pipeline; others fail the command."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class ClientProvider(Protocol):
    def client(self, service_name: str) -> Any: ...


@dataclass(frozen=True)
class ToolContext:
    tenant_id: str
    run_id: str
    idempotency_key: str
    clients: ClientProvider
    settings: Mapping[str, str]

    def setting(self, name: str) -> str:
        try:
            return self.settings[name]
        except KeyError:
            raise ToolError(
                f"the tool needs the setting {name} (a function environment variable)", retryable=False
            ) from None


ToolFunction = Callable[[Any, ToolContext], Mapping[str, Any]]
Reconcile = Callable[[Any, ToolContext], Mapping[str, Any] | None]
"""After an attempt whose outcome is unknown: the result if the effect happened, ``None`` if it did not."""


@dataclass(frozen=True)
class Tool:
    name: str
    run: ToolFunction
    repeat_safety: RepeatSafety
    reconcile: Reconcile | None = None
    """For a RECONCILE tool: checks the target; without one an unknown outcome goes to a person."""


def tool(
    *, repeat_safety: RepeatSafety, reconcile: Reconcile | None = None
) -> Callable[[ToolFunction], Tool]:
    """Declare a function as a tool; ``repeat_safety`` is required, so every tool says it."""

    def wrap(function: ToolFunction) -> Tool:
        return Tool(name=function.__name__, run=function, repeat_safety=repeat_safety, reconcile=reconcile)

    return wrap


@dataclass(frozen=True)
class Budget:
    """Limits per workflow; crossing one pauses the workflow for human review."""

    max_depth: int = 16
    max_steps: int = 32
    max_tokens: int = 200_000
    deadline: timedelta = timedelta(hours=24)


@dataclass(frozen=True)
class CommandSpec:
    name: str
    model: type[BaseModel]
    tool: Tool
    resource: Callable[[Any], str] | None = None
    """Names the resource a command changes, for per-resource serialization."""


StepResults = Mapping[str, Mapping[str, Any]]
"""The results of a step's commands, by command id, in the order they were proposed."""


@dataclass(frozen=True)
class Step:
    on: str
    """The event type that starts this step."""
    agent: Agent | None
    """Who proposes the step's commands; ``None`` when the event is itself the command."""
    outcome: str
    """The domain event published once every command of the step has succeeded."""
    final: bool = False
    outcome_payload: Callable[[StepResults], Mapping[str, Any]] | None = None
    """Builds the outcome's payload; by default the single command's result is the payload."""


@dataclass
class Workflow:
    """A workflow definition. Register its module in ``INTENTBUS_WORKFLOWS`` and every stage knows it."""

    name: str
    version: str
    policy: Policy
    budget: Budget = field(default_factory=Budget)
    approval_timeout: timedelta = timedelta(hours=4)
    """Every approval expires; a wait with no timeout would hang silently."""
    on_approval_expiry: Literal["cancel", "escalate"] = "cancel"
    """``cancel`` denies the command (the run ends DENIED); ``escalate`` pauses the run for review."""
    events: dict[str, TypeSpec] = field(default_factory=dict)
    commands: dict[str, CommandSpec] = field(default_factory=dict)
    steps: dict[str, Step] = field(default_factory=dict)
    starts_on: set[str] = field(default_factory=set)

    def event(self, name: str, model: type[BaseModel], *, starts: bool = False) -> None:
        self.events[name] = TypeSpec(name=name, kind=Kind.EVENT, model=model, owner=self.name)
        if starts:
            self.starts_on.add(name)

    def command(
        self,
        name: str,
        model: type[BaseModel],
        *,
        tool: Tool,
        resource: Callable[[Any], str] | None = None,
        starts: bool = False,
    ) -> None:
        """Declare a command type. ``starts=True``: other systems may send it directly (no agent)."""
        self.commands[name] = CommandSpec(name=name, model=model, tool=tool, resource=resource)
        if starts:
            self.starts_on.add(name)

    def step(self, step: Step) -> None:
        self.steps[step.on] = step

    def type_specs(self) -> list[TypeSpec]:
        command_specs = [
            TypeSpec(name=spec.name, kind=Kind.COMMAND, model=spec.model, owner=self.name)
            for spec in self.commands.values()
        ]
        return [*self.events.values(), *command_specs]

    def problems(self) -> list[str]:
        """What is inconsistent in the definition; the catalog refuses to load it if any."""
        found: list[str] = []
        for step in self.steps.values():
            if step.on not in self.events and step.on not in self.commands:
                found.append(f"step on {step.on!r}: no such event or command type")
            if step.outcome not in self.events:
                found.append(f"step on {step.on!r}: outcome {step.outcome!r} is not a declared event")
            if step.agent is None and step.on not in self.commands:
                found.append(f"step on {step.on!r}: a step without an agent must be on a command type")
        for name in self.starts_on:
            if name not in self.steps:
                found.append(f"{name!r} starts the workflow but no step handles it")
        return found
