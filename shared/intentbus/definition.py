"""The public API a workflow is written in: types, agents, tools, steps, budgets and policy."""

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from intentbus.backoff import SQS_MAX_VISIBILITY_SECONDS
from intentbus.envelope import Kind
from intentbus.errors import ConfigurationError, IntentbusError
from intentbus.frozen import Frozen, fields_repr, frozen_dataclass
from intentbus.policy import Policy
from intentbus.registry import TypeSpec


class TokenUsage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


_NO_TOKENS: list[TokenUsage] = []


def _no_tokens() -> TokenUsage:
    """A decision's default usage: one zero ``TokenUsage`` (immutable), made when first asked for, not once
    per decision (a model's construction, ~5 k instructions) nor at import (stages that decide nothing)."""
    if not _NO_TOKENS:
        _NO_TOKENS.append(TokenUsage())
    return _NO_TOKENS[0]


class ProposedCommand(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    type: str
    payload: dict[str, Any]


class Decision(BaseModel):
    """An agent's proposal: never an action. Policy decides whether any of it may run."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    agent: str
    commands: tuple[ProposedCommand, ...] = Field(min_length=1)
    rationale: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    confidence: float = Field(ge=0.0, le=1.0)
    tokens: TokenUsage = Field(default_factory=_no_tokens)
    model: str | None = None
    """The model that produced the decision; ``None`` for a scripted agent."""


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class DecisionContext(Frozen):
    """What an agent is shown: the triggering event and the workflow's position, not the whole log."""

    workflow: str
    tenant_id: str
    run_id: str
    step_index: int
    event_type: str
    event: BaseModel
    environment: str
    commands: "Mapping[str, CommandSpec]" = field(default_factory=dict)
    """The command types the agent is offered for this decision (``Step.tools``), by name."""
    selection: Mapping[str, Any] | None = None
    """What the step's ``context`` selector chose for a model to see; ``None``: the default view."""

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        workflow: str,
        tenant_id: str,
        run_id: str,
        step_index: int,
        event_type: str,
        event: BaseModel,
        environment: str,
        commands: "Mapping[str, CommandSpec] | None" = None,
        selection: Mapping[str, Any] | None = None,
    ) -> None:
        fields = self.__dict__  # written directly: ``object.__setattr__`` costs ~1 k instructions a field
        fields["workflow"] = workflow
        fields["tenant_id"] = tenant_id
        fields["run_id"] = run_id
        fields["step_index"] = step_index
        fields["event_type"] = event_type
        fields["event"] = event
        fields["environment"] = environment
        fields["commands"] = {} if commands is None else commands
        fields["selection"] = selection

    __repr__ = fields_repr

    def view(self) -> Mapping[str, Any]:
        """What a model is shown: the step's selection, or the event's payload and the run's position."""
        if self.selection is not None:
            return self.selection
        return {
            "workflow": self.workflow,
            "tenant_id": self.tenant_id,
            "environment": self.environment,
            "step_index": self.step_index,
            "event_type": self.event_type,
            "event": self.event.model_dump(mode="json"),
        }


ContextSelector = Callable[[DecisionContext], Mapping[str, Any]]
"""Chooses, for one decision, what a model sees (JSON-able); the workflow log is never shown whole."""


class Agent(Protocol):
    @property
    def name(self) -> str: ...

    def decide(self, context: DecisionContext) -> Decision: ...


class MalformedDecision(IntentbusError):
    """An agent's answer that is not a valid decision: why, and the raw output it gave.

    ``raw`` is JSON-able (for a model: its message and stop reason), kept for the repair attempt and
    for the quarantine record; ``tokens`` is what producing it cost.
    """

    code: ClassVar[str] = "malformed_decision"

    def __init__(
        self,
        reason: str,
        *,
        raw: Any,
        field: str | None = None,
        tokens: TokenUsage | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw
        self.field = field
        self.tokens = tokens or TokenUsage()


@runtime_checkable
class RepairableAgent(Agent, Protocol):
    """An agent that can be shown why its answer was refused and asked once more (a model)."""

    def repair(self, context: DecisionContext, failure: MalformedDecision) -> Decision:
        """A corrected decision, or ``MalformedDecision`` again; called at most once per decision."""
        ...


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class ScriptedAgent(Frozen):
    """A deterministic agent: a plain function from context to decision (demo, tests, rules)."""

    name: str
    script: Callable[[DecisionContext], Decision]

    def __init__(self, name: str, script: Callable[[DecisionContext], Decision]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "script", script)

    __repr__ = fields_repr

    def decide(self, context: DecisionContext) -> Decision:
        return self.script(context)


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class ModelAgent(Frozen):
    """An agent whose decisions come from a language model, bound when the stage runs.

    The workflow names the agent and its instructions; the deployment picks the model (Bedrock when
    ``BEDROCK_MODEL_ID`` is set). With no model configured, ``fallback`` decides, so a workflow with
    scripted fallbacks runs with no credentials (the demo, the tests).
    """

    name: str
    instructions: str
    """The system prompt: the agent's job. The event and the tools are added to it for each decision."""
    fallback: Agent | None = None
    max_tokens: int | None = None
    """Overrides ``BEDROCK_MAX_TOKENS`` for this agent."""
    temperature: float | None = None
    """Overrides ``BEDROCK_TEMPERATURE`` for this agent."""

    def __init__(
        self,
        name: str,
        instructions: str,
        fallback: "Agent | None" = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "instructions", instructions)
        object.__setattr__(self, "fallback", fallback)
        object.__setattr__(self, "max_tokens", max_tokens)
        object.__setattr__(self, "temperature", temperature)

    __repr__ = fields_repr

    def decide(self, context: DecisionContext) -> Decision:
        if self.fallback is None:
            raise ConfigurationError(
                f"agent {self.name!r} needs a model and has no fallback: set BEDROCK_MODEL_ID"
            )
        return self.fallback.decide(context)


class ModelProvider(Protocol):
    """Binds a ``ModelAgent`` to a configured model (the Bedrock adapter) when a stage runs."""

    def agent(self, spec: ModelAgent) -> Agent: ...


class RepeatSafety(StrEnum):
    """Whether running a tool a second time for one command is harmless."""

    SAFE = "safe"
    """Idempotent by nature (reads, absolute sets) or the target dedups on the idempotency key."""
    RECONCILE = "reconcile"
    """Not safe to repeat blindly: an unknown outcome must be reconciled first."""


class ToolEffect(StrEnum):
    """Whether a tool changes anything outside the pipeline (what must happen at most once)."""

    READ_ONLY = "read_only"
    """Only reads: running it again, or not at all, changes nothing."""
    WRITES = "writes"
    """Changes something (a service, a record, a message): each authorized command's effect happens
    once, never twice, and never without its recorded authorization."""


class ToolError(IntentbusError):
    """A tool's failure. ``retryable`` errors are retried by the pipeline; others fail the command."""

    code: ClassVar[str] = "tool"

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class ClientProvider(Protocol):
    def client(self, service_name: str) -> Any: ...


def _allows_any(resource: str) -> bool:
    return True


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class ToolContext(Frozen):
    """What a tool is given for one command: its tenant, run, idempotency key, AWS clients and settings."""

    tenant_id: str
    run_id: str
    idempotency_key: str
    clients: ClientProvider
    settings: Mapping[str, str]
    allows: Callable[[str], bool] = _allows_any
    """Whether the command's tenant may touch a resource (the workflow's ``tenant_resources``)."""

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        tenant_id: str,
        run_id: str,
        idempotency_key: str,
        clients: ClientProvider,
        settings: Mapping[str, str],
        allows: Callable[[str], bool] = _allows_any,
    ) -> None:
        object.__setattr__(self, "tenant_id", tenant_id)
        object.__setattr__(self, "run_id", run_id)
        object.__setattr__(self, "idempotency_key", idempotency_key)
        object.__setattr__(self, "clients", clients)
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "allows", allows)

    __repr__ = fields_repr

    def require_resource(self, resource: str) -> None:
        """The tool's own check, before it touches ``resource``: a second fence behind authorize's."""
        if not self.allows(resource):
            raise ToolError(f"tenant {self.tenant_id} may not touch {resource}", retryable=False)

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


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class Tool(Frozen):
    """A workflow's tool: the function that carries out a command, and how safe it is to repeat."""

    name: str
    run: ToolFunction
    repeat_safety: RepeatSafety
    reconcile: Reconcile | None = None
    """For a RECONCILE tool: checks the target; without one an unknown outcome goes to a person."""
    effect: ToolEffect = ToolEffect.WRITES
    """What the tool does to the world; undeclared, a tool is taken to write (the stricter checks)."""

    def __init__(
        self,
        name: str,
        run: ToolFunction,
        repeat_safety: RepeatSafety,
        reconcile: Reconcile | None = None,
        effect: ToolEffect = ToolEffect.WRITES,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "run", run)
        object.__setattr__(self, "repeat_safety", repeat_safety)
        object.__setattr__(self, "reconcile", reconcile)
        object.__setattr__(self, "effect", effect)

    __repr__ = fields_repr


def tool(
    *, repeat_safety: RepeatSafety, reconcile: Reconcile | None = None, effect: ToolEffect = ToolEffect.WRITES
) -> Callable[[ToolFunction], Tool]:
    """Declare a function as a tool; ``repeat_safety`` is required, so every tool says it. ``effect``
    says whether it writes: a tool that only reads declares ``ToolEffect.READ_ONLY``."""

    def wrap(function: ToolFunction) -> Tool:
        return Tool(
            name=function.__name__,
            run=function,
            repeat_safety=repeat_safety,
            reconcile=reconcile,
            effect=effect,
        )

    return wrap


@frozen_dataclass(init=False, repr=False, unsafe_hash=True)  # immutable (Frozen): hashed by value
class Budget(Frozen):
    """Limits per workflow; crossing one pauses the workflow for human review."""

    max_depth: int = 16
    max_steps: int = 32
    max_tokens: int = 200_000
    deadline: timedelta = timedelta(hours=24)

    def __init__(
        self,
        max_depth: int = 16,
        max_steps: int = 32,
        max_tokens: int = 200_000,
        deadline: timedelta = timedelta(hours=24),
    ) -> None:
        object.__setattr__(self, "max_depth", max_depth)
        object.__setattr__(self, "max_steps", max_steps)
        object.__setattr__(self, "max_tokens", max_tokens)
        object.__setattr__(self, "deadline", deadline)

    __repr__ = fields_repr


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class RetryPolicy(Frozen):
    """How execute retries a command whose tool failed in a way worth retrying (``ToolError(retryable=
    True)``, throttling, a 5xx): attempt ``n`` that fails waits ``min(cap, base * 2**(n-1))`` plus a jitter
    of up to one ``base`` (``intentbus.backoff``) before the next; once ``max_attempts`` have failed, the
    run pauses for human review. The wait is the message's SQS visibility, so the queue's
    ``maxReceiveCount`` (template parameter ``MaxReceiveCount``) must be at least ``max_attempts``."""

    base_seconds: float = 30.0
    cap_seconds: float = 900.0
    max_attempts: int = 5

    def __init__(self, base_seconds: float = 30.0, cap_seconds: float = 900.0, max_attempts: int = 5) -> None:
        object.__setattr__(self, "base_seconds", base_seconds)
        object.__setattr__(self, "cap_seconds", cap_seconds)
        object.__setattr__(self, "max_attempts", max_attempts)

    __repr__ = fields_repr

    def problems(self) -> list[str]:
        found: list[str] = []
        if not 1 <= self.base_seconds <= self.cap_seconds:
            found.append(
                f"retry base_seconds must be at least 1 and at most cap_seconds "
                f"(base {self.base_seconds:g}, cap {self.cap_seconds:g})"
            )
        if self.cap_seconds + self.base_seconds > SQS_MAX_VISIBILITY_SECONDS:
            found.append(
                f"retry cap_seconds + base_seconds (the longest wait, with its jitter) must be at most "
                f"{SQS_MAX_VISIBILITY_SECONDS} s, SQS's longest visibility timeout"
            )
        if self.max_attempts < 1:
            found.append(f"retry max_attempts must be at least 1 (it is {self.max_attempts})")
        return found


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class CommandSpec(Frozen):
    """A command a workflow declares: its arguments' model, the tool that runs it and its retry policy."""

    name: str
    model: type[BaseModel]
    tool: Tool
    resource: Callable[[Any], str] | None = None
    """Names the resource a command changes, for per-resource serialization."""
    scope: Callable[[Any], tuple[str, ...]] | None = None
    """Names every resource the command touches (reads included), for the tenant's allow-list;
    by default its ``resource``."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        name: str,
        model: type[BaseModel],
        tool: Tool,
        resource: Callable[[Any], str] | None = None,
        scope: Callable[[Any], tuple[str, ...]] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "tool", tool)
        object.__setattr__(self, "resource", resource)
        object.__setattr__(self, "scope", scope)
        object.__setattr__(self, "retry", RetryPolicy() if retry is None else retry)

    __repr__ = fields_repr

    def touches(self, arguments: BaseModel) -> tuple[str, ...]:
        if self.scope is not None:
            return tuple(self.scope(arguments))
        return () if self.resource is None else (self.resource(arguments),)


StepResults = Mapping[str, Mapping[str, Any]]
"""The results of a step's commands, by command id, in the order they were proposed."""


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class Step(Frozen):
    """One step of a workflow: the event that starts it, who proposes its commands, and what it publishes."""

    on: str
    """The event type that starts this step."""
    agent: Agent | None
    """Who proposes the step's commands; ``None`` when the event is itself the command."""
    outcome: str
    """The domain event published once every command of the step has succeeded."""
    final: bool = False
    outcome_payload: Callable[[StepResults], Mapping[str, Any]] | None = None
    """Builds the outcome's payload; by default the single command's result is the payload."""
    context: ContextSelector | None = None
    """What a model sees for this step; by default the event's payload and the run's position."""
    tools: tuple[str, ...] | None = None
    """The command types the agent is offered; by default every command the workflow declares.

    An offer is not a permission: policy still decides whether a proposed command may run.
    """

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        on: str,
        agent: "Agent | None",
        outcome: str,
        final: bool = False,
        outcome_payload: Callable[[StepResults], Mapping[str, Any]] | None = None,
        context: "ContextSelector | None" = None,
        tools: tuple[str, ...] | None = None,
    ) -> None:
        object.__setattr__(self, "on", on)
        object.__setattr__(self, "agent", agent)
        object.__setattr__(self, "outcome", outcome)
        object.__setattr__(self, "final", final)
        object.__setattr__(self, "outcome_payload", outcome_payload)
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "tools", tools)

    __repr__ = fields_repr


@dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class Workflow:
    """A workflow definition. Register its module in ``INTENTBUS_WORKFLOWS`` and every stage knows it."""

    name: str
    version: str
    policy: Policy
    budget: Budget = field(default_factory=Budget)
    tenant_budgets: dict[str, Budget] = field(default_factory=dict)
    """Per tenant, a budget that replaces ``budget``: configuration, so checking it costs no read."""
    approval_timeout: timedelta = timedelta(hours=4)
    """Every approval expires; a wait with no timeout would hang silently."""
    on_approval_expiry: Literal["cancel", "escalate"] = "cancel"
    """``cancel`` denies the command (the run ends DENIED); ``escalate`` pauses the run for review."""
    tenant_resources: Mapping[str, tuple[str, ...]] | None = None
    """Per tenant, the resources (``fnmatch`` patterns, e.g. ``ecs:shop/*``) its commands may touch; a
    tenant not listed may touch none (``"*"`` lists patterns for every tenant). ``None``: no allow-list,
    for workflows whose commands name no resource. Checked by authorize and again by the tool
    (``ToolContext.require_resource``)."""
    max_commands: int = 4
    """The most commands one decision may propose; a decision with more is refused (quarantined)."""
    examples: tuple[Mapping[str, Any], ...] = ()
    """Sample inputs, as a producer sends them (envelopes), for ``intentbus faults`` to drive the
    workflow with; the stages never read them."""
    events: dict[str, TypeSpec] = field(default_factory=dict)
    commands: dict[str, CommandSpec] = field(default_factory=dict)
    steps: dict[str, Step] = field(default_factory=dict)
    starts_on: set[str] = field(default_factory=set)

    def __init__(  # noqa: PLR0917 - a dataclass's fields, in order
        self,
        name: str,
        version: str,
        policy: Policy,
        budget: Budget | None = None,
        tenant_budgets: dict[str, Budget] | None = None,
        approval_timeout: timedelta = timedelta(hours=4),
        on_approval_expiry: Literal["cancel", "escalate"] = "cancel",
        tenant_resources: Mapping[str, tuple[str, ...]] | None = None,
        max_commands: int = 4,
        examples: tuple[Mapping[str, Any], ...] = (),
        events: dict[str, TypeSpec] | None = None,
        commands: dict[str, CommandSpec] | None = None,
        steps: dict[str, Step] | None = None,
        starts_on: set[str] | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.policy = policy
        self.budget = Budget() if budget is None else budget
        self.tenant_budgets = {} if tenant_budgets is None else tenant_budgets
        self.approval_timeout = approval_timeout
        self.on_approval_expiry = on_approval_expiry
        self.tenant_resources = tenant_resources
        self.max_commands = max_commands
        self.examples = examples
        self.events = {} if events is None else events
        self.commands = {} if commands is None else commands
        self.steps = {} if steps is None else steps
        self.starts_on = set() if starts_on is None else starts_on

    __repr__ = fields_repr

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
        scope: Callable[[Any], tuple[str, ...]] | None = None,
        starts: bool = False,
        retry: RetryPolicy | None = None,
    ) -> None:
        """Declare a command type. ``starts=True``: other systems may send it directly (no agent).
        ``retry``: how a retryable failure of its tool is retried; by default ``RetryPolicy()``."""
        self.commands[name] = CommandSpec(
            name=name,
            model=model,
            tool=tool,
            resource=resource,
            scope=scope,
            retry=retry or RetryPolicy(),
        )
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

    def allows_resource(self, tenant_id: str, resource: str) -> bool:
        if self.tenant_resources is None:
            return True
        return _allows(self.tenant_resources.get(tenant_id, ()), self.tenant_resources.get("*", ()), resource)

    def offered(self, step: Step) -> dict[str, CommandSpec]:
        """The commands a step's agent is offered (``Step.tools``, or every declared command)."""
        names = self.commands if step.tools is None else step.tools
        return {name: self.commands[name] for name in names if name in self.commands}

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
            found.extend(
                f"step on {step.on!r}: tool {name!r} is not a declared command"
                for name in step.tools or ()
                if name not in self.commands
            )
        for name in self.starts_on:
            if name not in self.steps:
                found.append(f"{name!r} starts the workflow but no step handles it")
        if self.max_commands < 1:
            found.append("max_commands must be at least 1")
        for spec in self.commands.values():
            found.extend(f"command {spec.name!r}: {problem}" for problem in spec.retry.problems())
        return found


_Patterns = tuple[str, ...]
_MATCHED: dict[tuple[int, int, str], tuple[_Patterns, _Patterns, bool]] = {}
_MATCHED_KEPT = 4096


def _allows(own: _Patterns, anyone: _Patterns, resource: str) -> bool:
    """Whether ``resource`` matches one of a tenant's patterns or of the ``"*"`` ones. A deployment asks
    about a few resources, again and again: each answer is kept with the very tuples it was made from
    (immutable, and held by the entry, so no other tuple has their ids while it is kept), so a mapping
    given other patterns, replaced or changed in place, is asked afresh."""
    key = (id(own), id(anyone), resource)
    known = _MATCHED.get(key)
    if known is not None and known[0] is own and known[1] is anyone:
        return known[2]
    matched = any(fnmatch.fnmatchcase(resource, pattern) for pattern in (*own, *anyone))
    if type(own) is tuple and type(anyone) is tuple:  # else it might change under the kept answer
        if len(_MATCHED) >= _MATCHED_KEPT:
            _MATCHED.clear()
        _MATCHED[key] = (own, anyone, matched)
    return matched
