"""Test-only workflows for budgets and review, written through the public API like any user's.

``workflow`` (ping_pong): two agents waking each other forever. A ``Ping`` makes the ponger propose
``pong``, whose outcome is a ``Pong`` (causation depth + 1), which makes the pinger propose ``ping``,
whose outcome is a ``Ping``... No step is final: only the budget (causation depth ``MAX_DEPTH``)
stops it. Every agent call is appended to ``agent_calls`` and reports ``TOKENS_PER_CALL`` tokens.

``relay``: two legs, the second one final, with a budget of one step (tenant ``roomy``: ten), so a
run pauses after its first leg and finishes once a person resumes it with a raised step budget.

Register both: ``tests.pingpong_workflow,tests.pingpong_workflow:relay``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from intentbus.definition import (
    Budget,
    Decision,
    DecisionContext,
    ProposedCommand,
    RepeatSafety,
    ScriptedAgent,
    Step,
    TokenUsage,
    ToolContext,
    ToolEffect,
    Workflow,
    tool,
)
from intentbus.policy import Effect, Policy, Rule
from intentbus.registry import Payload

MODULE = "tests.pingpong_workflow"
WORKFLOWS = f"{MODULE},{MODULE}:relay"
PING, PONG = "Ping", "Pong"
MAX_DEPTH = 4
TOKENS_PER_CALL = 100

agent_calls: list[str] = []
"""``<agent>:<run id>:<rally>`` for every agent call, in order."""


class Ball(Payload):
    rally: int = Field(ge=0)


class Hit(Payload):
    rally: int = Field(ge=0)


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.READ_ONLY)
def hit(command: Hit, context: ToolContext) -> Mapping[str, Any]:
    return {"rally": command.rally + 1}


def _returns(agent: str, command: str) -> ScriptedAgent:
    def script(context: DecisionContext) -> Decision:
        ball = context.event
        assert isinstance(ball, Ball)
        agent_calls.append(f"{agent}:{context.run_id}:{ball.rally}")
        return Decision(
            agent=agent,
            rationale=f"{agent} returns the ball",
            confidence=1.0,
            commands=(ProposedCommand(type=command, payload={"rally": ball.rally}),),
            tokens=TokenUsage(input_tokens=TOKENS_PER_CALL - 20, output_tokens=20),
        )

    return ScriptedAgent(agent, script)


workflow = Workflow(
    name="ping_pong",
    version="1",
    budget=Budget(max_depth=MAX_DEPTH, max_steps=1000, max_tokens=1_000_000),
    policy=Policy(
        rules=(
            Rule(id="rally-ping", command="ping", effect=Effect.ALLOW),
            Rule(id="rally-pong", command="pong", effect=Effect.ALLOW),
        )
    ),
)
workflow.event(PING, Ball, starts=True)
workflow.event(PONG, Ball)
workflow.command("ping", Hit, tool=hit)
workflow.command("pong", Hit, tool=hit)
workflow.step(Step(on=PING, agent=_returns("ponger", "pong"), outcome=PONG))
workflow.step(Step(on=PONG, agent=_returns("pinger", "ping"), outcome=PING))


class Leg(Payload):
    leg: int = Field(ge=0)


class RunLeg(Payload):
    leg: int = Field(ge=0)


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.READ_ONLY)
def run_leg(command: RunLeg, context: ToolContext) -> Mapping[str, Any]:
    return {"leg": command.leg + 1}


def _runner(context: DecisionContext) -> Decision:
    leg = context.event
    assert isinstance(leg, Leg)
    agent_calls.append(f"runner:{context.run_id}:{leg.leg}")
    return Decision(
        agent="runner",
        rationale="run the next leg",
        confidence=1.0,
        commands=(ProposedCommand(type="run_leg", payload={"leg": leg.leg}),),
        tokens=TokenUsage(input_tokens=10, output_tokens=5),
    )


relay = Workflow(
    name="relay",
    version="1",
    budget=Budget(max_steps=1),
    tenant_budgets={"roomy": Budget(max_steps=10)},
    policy=Policy(rules=(Rule(id="legs", command="run_leg", effect=Effect.ALLOW),)),
)
relay.event("RelayStarted", Leg, starts=True)
relay.event("BatonPassed", Leg)
relay.event("RelayFinished", Leg)
relay.command("run_leg", RunLeg, tool=run_leg)
relay.step(Step(on="RelayStarted", agent=ScriptedAgent("runner", _runner), outcome="BatonPassed"))
relay.step(
    Step(on="BatonPassed", agent=ScriptedAgent("runner", _runner), outcome="RelayFinished", final=True)
)
