"""The tools offered for one decision, and turning a model's tool calls into a Decision.

Every tool call is validated with pydantic against the command's model before it becomes a
proposal; an answer that does not validate raises ``MalformedDecision`` with every problem named,
which is what the repair attempt shows the model. The problems are told without the model's text
(``intentbus.validation_errors``), as they become a logged reason; the model sees its own answer again
beside them.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intentbus.agents.tool_schemas import description, proposal_schema, tool_name
from intentbus.definition import CommandSpec, Decision, MalformedDecision, ProposedCommand, TokenUsage
from intentbus.errors import ConfigurationError, MalformedInput


@dataclass(frozen=True)
class ToolOffer:
    """One command offered to a model as a tool: its name, description, JSON schema and arguments' model."""

    name: str
    """The tool's name as the model sees it (see ``tool_name``)."""
    command: str
    description: str
    schema: dict[str, Any]
    model: type[BaseModel]


@dataclass(frozen=True)
class ToolCall:
    """One tool call from a model's answer."""

    id: str
    name: str
    input: Any


class _ProposalInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    command: dict[str, Any]
    rationale: str = Field(min_length=1, max_length=2000)
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class _Proposal:
    """A tool call's arguments read as a proposed command, with the model's rationale and evidence."""

    command: ProposedCommand
    rationale: str
    confidence: float
    evidence: dict[str, Any]


class Toolkit:
    """The tools for one decision, generated from the command specs the step offers."""

    def __init__(self, commands: Mapping[str, CommandSpec]) -> None:
        self.offers: dict[str, ToolOffer] = {}
        for command, spec in commands.items():
            name = tool_name(command)
            if name in self.offers:
                raise ConfigurationError(
                    f"commands {self.offers[name].command!r} and {command!r} have the same tool name {name!r}"
                )
            self.offers[name] = ToolOffer(
                name=name,
                command=command,
                description=description(spec.model, spec.tool.run.__doc__, command),
                schema=proposal_schema(spec.model),
                model=spec.model,
            )
        if not self.offers:
            raise ConfigurationError("a model agent needs at least one command to offer as a tool")

    def decision(
        self,
        *,
        agent: str,
        calls: Sequence[ToolCall],
        text: str,
        tokens: TokenUsage,
        raw: Any,
        model: str | None = None,
    ) -> Decision:
        """The decision the calls make, or ``MalformedDecision`` naming every invalid call."""
        if not calls:
            said = f", {len(text)} characters" if text else ""
            raise MalformedDecision(
                f"the answer has no tool call (text only{said}); a decision must call one of the tools "
                f"{sorted(self.offers)}",
                raw=raw,
                field="toolUse",
                tokens=tokens,
            )
        proposals: list[_Proposal] = []
        problems: list[MalformedInput] = []
        for call in calls:
            try:
                proposals.append(self._proposal(call))
            except MalformedInput as problem:
                problems.append(problem)
        if problems:
            raise MalformedDecision(
                "; ".join(problem.reason for problem in problems),
                raw=raw,
                field=problems[0].field,
                tokens=tokens,
            )
        evidence: dict[str, Any] = {}
        for proposal in proposals:
            evidence.update(proposal.evidence)
        rationales = list(dict.fromkeys(proposal.rationale for proposal in proposals))
        return Decision(
            agent=agent,
            commands=tuple(proposal.command for proposal in proposals),
            rationale=" ".join(rationales),
            evidence=evidence,
            confidence=min(proposal.confidence for proposal in proposals),
            tokens=tokens,
            model=model,
        )

    def _proposal(self, call: ToolCall) -> _Proposal:
        offer = self.offers.get(call.name)
        if offer is None:
            # Not named: the name is the model's own text, and a reason is logged.
            raise MalformedInput(
                f"toolUse.name: no such tool (a name of {len(call.name)} characters); "
                f"the tools are {sorted(self.offers)}",
                field="toolUse.name",
            )
        try:
            wrapper = _ProposalInput.model_validate(call.input)
        except ValidationError as error:
            raise MalformedInput.from_validation(error, _ProposalInput, prefix=f"{call.name}.") from None
        try:
            payload = offer.model.model_validate(wrapper.command)
        except ValidationError as error:
            raise MalformedInput.from_validation(error, offer.model, prefix=f"{call.name}.command.") from None
        return _Proposal(
            command=ProposedCommand(type=offer.command, payload=payload.model_dump(mode="json")),
            rationale=wrapper.rationale.strip(),
            confidence=wrapper.confidence,
            evidence=wrapper.evidence,
        )
