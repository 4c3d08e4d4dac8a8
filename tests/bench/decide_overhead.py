"""The decide stage's own cost per event, with the model call stubbed out (in memory, no AWS).

Two agents: the incident workflow's scripted triage agent, and the Bedrock adapter on a client that
answers a canned Converse response at once. For each, the bare agent call is timed against
``DecideStage.handle`` on an accepted event (parse, load the run, check budgets, ask the agent,
validate the proposal, record, publish), so the difference is what the stage adds to a decision.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from intentbus.adapters.bedrock_agent import BedrockAgent, BedrockModels, Converse
from intentbus.catalog import Catalog
from intentbus.config import BedrockSettings
from intentbus.definition import Agent, DecisionContext, ModelProvider
from intentbus.stages.decide import DecideStage
from intentbus.stages.validate import ValidateStage
from intentbus.testing import InMemoryStore, ListQuarantine, RecordingBus, VirtualClock, bus_body
from intentbus.workflows import incident
from tests.fakes import raw_body

EVENTS = 400
ROUNDS = 3
SETTINGS = BedrockSettings(model_id="anthropic.claude-3-5-haiku-20241022-v1:0")
PAYLOAD = {
    "service": "checkout-api",
    "cluster": "shop",
    "environment": "dev",
    "p99_ms": 1450.0,
    "threshold_ms": 500.0,
}
ANSWER: dict[str, Any] = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"text": "Latency is 3x the threshold; collecting diagnostics first."},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_bench",
                        "name": "collect_diagnostics",
                        "input": {
                            "command": {"service": "checkout-api", "cluster": "shop", "environment": "dev"},
                            "rationale": "p99 is far over threshold",
                            "confidence": 0.8,
                        },
                    }
                },
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 1187, "outputTokens": 142, "totalTokens": 1329},
    "metrics": {"latencyMs": 0},
}


class CannedClient:
    """Stands in for bedrock-runtime: the model's answer, with no time spent on it."""

    def converse(self, **request: Any) -> dict[str, Any]:
        return ANSWER


def _deps(catalog: Catalog) -> tuple[Any, InMemoryStore]:
    from intentbus.producers import ProducerBindings
    from intentbus.stages.common import StageDeps

    deps = StageDeps(
        catalog=catalog,
        bus=RecordingBus(),
        quarantine=ListQuarantine(),
        clock=VirtualClock(),
        environment="dev",
        producers=ProducerBindings.parse("monitoring.example=*"),
    )
    return deps, InMemoryStore()


def _accepted(catalog: Catalog, count: int, offset: int) -> list[str]:
    deps, store = _deps(catalog)
    validate = ValidateStage(deps, store)
    bodies = []
    for number in range(offset, offset + count):
        detail = {"id": f"evt-bench-{number}", "tenant_id": "bench", "payload": PAYLOAD}
        (accepted,) = validate.handle(raw_body(detail, detail_type="ServiceLatencyIncreased")).published
        bodies.append(bus_body(accepted))
    return bodies


def _context(catalog: Catalog) -> DecisionContext:
    step = incident.workflow.steps["ServiceLatencyIncreased"]
    return DecisionContext(
        workflow=incident.workflow.name,
        tenant_id="bench",
        run_id="run-bench",
        step_index=0,
        event_type="ServiceLatencyIncreased",
        event=incident.ServiceLatencyIncreased.model_validate(PAYLOAD),
        environment="dev",
        commands=incident.workflow.offered(step),
    )


def _best_ms(run: Callable[[int], None]) -> float:
    """Best of ``ROUNDS`` rounds of ``EVENTS`` calls, in ms per call."""
    best = float("inf")
    for round_number in range(ROUNDS):
        started = time.perf_counter()
        run(round_number)
        best = min(best, (time.perf_counter() - started) / EVENTS * 1000)
    return best


def _pair(catalog: Catalog, agent: Agent, models: ModelProvider | None) -> dict[str, float]:
    context = _context(catalog)
    bodies = {r: _accepted(catalog, EVENTS, r * EVENTS) for r in range(ROUNDS)}

    def bare(_: int) -> None:
        for _ in range(EVENTS):
            agent.decide(context)

    def stage(round_number: int) -> None:
        deps, store = _deps(catalog)
        decide = DecideStage(deps, store, models=models)
        for body in bodies[round_number]:
            decide.handle(body)

    bare_ms = _best_ms(bare)
    stage_ms = _best_ms(stage)
    return {
        "agent_ms": round(bare_ms, 4),
        "stage_ms": round(stage_ms, 4),
        "overhead_ms": round(stage_ms - bare_ms, 4),
        "ratio": round(stage_ms / bare_ms, 2),
    }


def measure() -> dict[str, dict[str, float]]:
    catalog = Catalog([incident.workflow])
    scripted = _pair(catalog, incident.TRIAGE, None)
    converse = Converse(SETTINGS, CannedClient)  # type: ignore[arg-type]
    bedrock = _pair(catalog, BedrockAgent(incident.TRIAGE, converse), BedrockModels(converse))
    return {"scripted": scripted, "bedrock_stubbed": bedrock}


def report() -> dict[str, dict[str, float]]:
    figures = measure()
    for name, row in figures.items():
        print(
            f"decide overhead ({name} agent, model call stubbed): agent {row['agent_ms']:.3f} ms, "
            f"stage {row['stage_ms']:.3f} ms per event; the stage adds {row['overhead_ms']:.3f} ms "
            f"(x{row['ratio']:.1f} the bare agent call)"
        )
    return figures


if __name__ == "__main__":
    report()
