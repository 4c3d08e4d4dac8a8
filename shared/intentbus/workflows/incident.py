"""Incident response: latency rises, agents diagnose, and a scale-up runs within policy.

ServiceLatencyIncreased → DiagnosisRequested → DependencyFailureSuspected → RecoveryProposed
→ RecoveryCompleted. Each arrow is one step: an agent proposes a command, policy authorizes it,
its tool runs once, and the outcome event starts the next step.
"""

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from botocore.exceptions import ClientError
from pydantic import Field

from intentbus.definition import (
    Budget,
    Decision,
    DecisionContext,
    ModelAgent,
    ProposedCommand,
    RepeatSafety,
    ScriptedAgent,
    Step,
    ToolContext,
    ToolEffect,
    ToolError,
    Workflow,
    tool,
)
from intentbus.policy import Effect, Limit, Policy, Rule
from intentbus.registry import Payload
from intentbus.tools import aws_errors, tool_error

METRICS_NAMESPACE = "intentbus/services"
LATENCY_METRIC = "LatencyP99"
DEPENDENCY_ERROR_METRIC = "DependencyErrorRate"
SUSPECT_ERROR_RATE = 0.05
MAX_DESIRED_COUNT = 20
_NO_SUCH_SERVICE = frozenset({"ServiceNotFoundException", "ServiceNotActiveException"})
"""UpdateService's codes for a service that is not there to scale (a deleted one is inactive)."""

Environment = Literal["dev", "staging", "production"]


class ServiceRef(Payload):
    service: str = Field(min_length=1, max_length=255)
    cluster: str = Field(min_length=1, max_length=255)
    environment: Environment


class ServiceLatencyIncreased(ServiceRef):
    p99_ms: float = Field(ge=0)
    threshold_ms: float = Field(gt=0)


class DiagnosisRequested(ServiceRef):
    p99_ms: float
    datapoints: int = Field(ge=0)
    window_minutes: int


class DependencyFailureSuspected(ServiceRef):
    dependency: str
    error_rate: float
    checked: dict[str, float]


class RecoveryProposed(ServiceRef):
    current_count: int = Field(ge=0)
    desired_count: int = Field(ge=1)
    reason: str


class RecoveryCompleted(ServiceRef):
    previous_count: int = Field(ge=0)
    desired_count: int = Field(ge=1)


class CollectDiagnostics(ServiceRef):
    window_minutes: int = Field(default=15, ge=1, le=1440)


class CheckDependencies(ServiceRef):
    window_minutes: int = Field(default=15, ge=1, le=1440)


class PlanRecovery(ServiceRef):
    dependency: str


class ScaleService(ServiceRef):
    desired_count: int = Field(ge=1)
    from_count: int = Field(ge=0)
    """The count the plan was made from: a repeat after a crash must not report its own effect."""


def _window(minutes: int) -> tuple[datetime, datetime]:
    end = datetime.now(UTC)
    return end - timedelta(minutes=minutes), end


def _max_statistic(
    context: ToolContext, metric: str, dimensions: list[dict[str, str]], minutes: int
) -> tuple[float, int]:
    start, end = _window(minutes)
    with aws_errors(f"reading {metric}"):
        response = context.clients.client("cloudwatch").get_metric_statistics(
            Namespace=METRICS_NAMESPACE,
            MetricName=metric,
            Dimensions=dimensions,
            StartTime=start,
            EndTime=end,
            Period=60,
            Statistics=["Maximum"],
        )
    points = response.get("Datapoints", [])
    return max((float(point["Maximum"]) for point in points), default=0.0), len(points)


METRIC_DATA_QUERIES = 500
"""GetMetricData's most queries a call."""


def _maxima(
    cloudwatch: Any, metric: str, dimension_sets: list[list[dict[str, str]]], minutes: int
) -> list[float]:
    """Each dimension set's maximum over the window (0.0 without datapoints), in order: what as many
    GetMetricStatistics calls read, in one GetMetricData call per 500 metrics (and its pages)."""
    start, end = _window(minutes)
    found: list[float | None] = [None] * len(dimension_sets)
    for first in range(0, len(dimension_sets), METRIC_DATA_QUERIES):
        # Ids are ours (a label is the caller's text, never parsed): m<position in dimension_sets>.
        positions = {
            f"m{index}": index
            for index in range(first, min(first + METRIC_DATA_QUERIES, len(dimension_sets)))
        }
        request: dict[str, Any] = {
            "MetricDataQueries": [
                {
                    "Id": query_id,
                    "MetricStat": {
                        "Metric": {
                            "Namespace": METRICS_NAMESPACE,
                            "MetricName": metric,
                            "Dimensions": dimension_sets[index],
                        },
                        "Period": 60,
                        "Stat": "Maximum",
                    },
                }
                for query_id, index in positions.items()
            ],
            "StartTime": start,
            "EndTime": end,
        }
        while True:
            with aws_errors(f"reading {metric}"):
                response = cloudwatch.get_metric_data(**request)
            for result in response.get("MetricDataResults", []):
                status = result.get("StatusCode", "Complete")
                if status not in ("Complete", "PartialData"):
                    raise ToolError(f"reading {metric} failed: {status}", retryable=status == "InternalError")
                index = positions[result["Id"]]
                for value in result.get("Values", []):  # a metric's datapoints may span pages
                    seen = found[index]
                    found[index] = float(value) if seen is None else max(seen, float(value))
            token = response.get("NextToken")
            if not token:
                break
            request["NextToken"] = token
    return [0.0 if maximum is None else maximum for maximum in found]


def service_resource(command: ServiceRef) -> str:
    """The name the tenant allow-list and the resource serialization use for an ECS service."""
    return f"ecs:{command.cluster}/{command.service}"


def _scope(command: ServiceRef) -> tuple[str, ...]:
    return (service_resource(command),)


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.READ_ONLY)
def collect_diagnostics(command: CollectDiagnostics, context: ToolContext) -> Mapping[str, Any]:
    """Reads the service's p99 latency from CloudWatch."""
    context.require_resource(service_resource(command))
    p99, count = _max_statistic(
        context, LATENCY_METRIC, [{"Name": "Service", "Value": command.service}], command.window_minutes
    )
    return {
        **command.model_dump(exclude={"window_minutes"}),
        "p99_ms": p99,
        "datapoints": count,
        "window_minutes": command.window_minutes,
    }


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.READ_ONLY)
def check_dependencies(command: CheckDependencies, context: ToolContext) -> Mapping[str, Any]:
    """Reads every dependency's error rate and names the worst one: one ListMetrics, one GetMetricData."""
    context.require_resource(service_resource(command))
    cloudwatch = context.clients.client("cloudwatch")
    with aws_errors("listing dependency metrics"):
        listed = cloudwatch.list_metrics(
            Namespace=METRICS_NAMESPACE,
            MetricName=DEPENDENCY_ERROR_METRIC,
            Dimensions=[{"Name": "Service", "Value": command.service}],
        )
    metrics: list[tuple[str, list[dict[str, str]]]] = []
    for metric in listed.get("Metrics", []):
        dimensions = {item["Name"]: item["Value"] for item in metric.get("Dimensions", [])}
        dependency = dimensions.get("Dependency")
        if dependency:
            metrics.append((dependency, metric["Dimensions"]))
    if not metrics:
        raise ToolError(f"no dependency metrics for {command.service}", retryable=False)
    maxima = _maxima(
        cloudwatch, DEPENDENCY_ERROR_METRIC, [dims for _, dims in metrics], command.window_minutes
    )
    rates: dict[str, float] = {}
    for (dependency, _), maximum in zip(metrics, maxima, strict=True):
        rates[dependency] = maximum  # a dependency listed twice keeps its last metric's, as it always has
    worst = max(rates, key=lambda name: rates[name])
    return {
        **command.model_dump(exclude={"window_minutes"}),
        "dependency": worst,
        "error_rate": rates[worst],
        "checked": rates,
    }


def _describe(context: ToolContext, command: ServiceRef) -> list[dict[str, Any]]:
    with aws_errors(f"describing {command.cluster}/{command.service}"):
        response = context.clients.client("ecs").describe_services(
            cluster=command.cluster, services=[command.service]
        )
    return list(response.get("services", []))


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.READ_ONLY)
def plan_recovery(command: PlanRecovery, context: ToolContext) -> Mapping[str, Any]:
    """Reads the ECS service and proposes doubling it, within the policy's ceiling."""
    context.require_resource(service_resource(command))
    services = _describe(context, command)
    if not services:
        raise ToolError(f"ECS service {command.service} not found in {command.cluster}", retryable=False)
    current = int(services[0]["desiredCount"])
    return {
        **command.model_dump(exclude={"dependency"}),
        "current_count": current,
        "desired_count": max(1, min(MAX_DESIRED_COUNT, current * 2)),
        "reason": f"absorb retries while {command.dependency} is failing",
    }


@tool(repeat_safety=RepeatSafety.SAFE, effect=ToolEffect.WRITES)
def scale_service(command: ScaleService, context: ToolContext) -> Mapping[str, Any]:
    """Sets the desired count: an absolute value, so running it twice leaves the same service.

    UpdateService itself says whether the service exists (no DescribeServices before it)."""
    context.require_resource(service_resource(command))
    try:
        context.clients.client("ecs").update_service(
            cluster=command.cluster, service=command.service, desiredCount=command.desired_count
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in _NO_SUCH_SERVICE:
            raise ToolError(
                f"ECS service {command.service} not found in {command.cluster}", retryable=False
            ) from error
        raise tool_error(error, f"scaling {command.cluster}/{command.service}") from error
    return {**command.model_dump(exclude={"from_count"}), "previous_count": command.from_count}


def _propose(
    agent: str, command: str, payload: dict[str, Any], rationale: str, confidence: float
) -> Decision:
    return Decision(
        agent=agent,
        commands=(ProposedCommand(type=command, payload=payload),),
        rationale=rationale,
        confidence=confidence,
    )


def _service(event: Any) -> dict[str, Any]:
    return {"service": event.service, "cluster": event.cluster, "environment": event.environment}


def _triage(context: DecisionContext) -> Decision:
    event = context.event
    assert isinstance(event, ServiceLatencyIncreased)
    return _propose(
        "triage",
        "collect_diagnostics",
        _service(event),
        f"p99 {event.p99_ms:g} ms is over {event.threshold_ms:g} ms: read the latency metrics",
        0.9,
    )


def _diagnose(context: DecisionContext) -> Decision:
    event = context.event
    assert isinstance(event, DiagnosisRequested)
    return _propose(
        "diagnostician",
        "check_dependencies",
        _service(event),
        f"p99 peaked at {event.p99_ms:g} ms: look for a failing dependency",
        0.8,
    )


def _plan(context: DecisionContext) -> Decision:
    event = context.event
    assert isinstance(event, DependencyFailureSuspected)
    return _propose(
        "planner",
        "plan_recovery",
        {**_service(event), "dependency": event.dependency},
        f"{event.dependency} errors at {event.error_rate:.0%}: plan capacity",
        0.75,
    )


def _operate(context: DecisionContext) -> Decision:
    event = context.event
    assert isinstance(event, RecoveryProposed)
    return _propose(
        "operator",
        "scale_service",
        {**_service(event), "desired_count": event.desired_count, "from_count": event.current_count},
        f"scale {event.service} from {event.current_count} to {event.desired_count}",
        0.85,
    )


POLICY = Policy(
    rules=(
        Rule(
            id="read-only-diagnostics",
            command="collect_diagnostics",
            effect=Effect.ALLOW,
            reason="reads metrics only",
        ),
        Rule(
            id="read-only-dependencies",
            command="check_dependencies",
            effect=Effect.ALLOW,
            reason="reads metrics only",
        ),
        Rule(id="read-only-planning", command="plan_recovery", effect=Effect.ALLOW, reason="reads ECS only"),
        # The deployment's Environment decides, never the environment an alert's payload claims.
        Rule(
            id="scale-non-production",
            command="scale_service",
            effect=Effect.ALLOW,
            environments=("dev", "staging"),
            limits={"desired_count": Limit(min=1, max=MAX_DESIRED_COUNT)},
            reason="scaling outside production is allowed up to the ceiling",
        ),
        Rule(
            id="scale-production-needs-approval",
            command="scale_service",
            effect=Effect.REQUIRE_APPROVAL,
            environments=("production",),
            limits={"desired_count": Limit(min=1, max=MAX_DESIRED_COUNT)},
            reason="scaling a production service needs a person's approval",
        ),
    )
)

TENANT_SERVICES: dict[str, tuple[str, ...]] = dict.fromkeys(
    ("org_enterprise_alpha", "acme", "globex", "bench"), ("ecs:shop/*",)
)
"""The ECS services each tenant's incidents may read and scale; a tenant not listed may touch none.
A deployment lists its own (and scopes the execute role's ECS access with ``IncidentEcsCluster``)."""

workflow = Workflow(
    name="incident_response",
    version="1",
    policy=POLICY,
    budget=Budget(max_depth=8, max_steps=8, max_tokens=50_000, deadline=timedelta(hours=6)),
    tenant_resources=TENANT_SERVICES,
    max_commands=1,
)

workflow.event("ServiceLatencyIncreased", ServiceLatencyIncreased, starts=True)
workflow.event("DiagnosisRequested", DiagnosisRequested)
workflow.event("DependencyFailureSuspected", DependencyFailureSuspected)
workflow.event("RecoveryProposed", RecoveryProposed)
workflow.event("RecoveryCompleted", RecoveryCompleted)

workflow.command("collect_diagnostics", CollectDiagnostics, tool=collect_diagnostics, scope=_scope)
workflow.command("check_dependencies", CheckDependencies, tool=check_dependencies, scope=_scope)
workflow.command("plan_recovery", PlanRecovery, tool=plan_recovery, scope=_scope)
workflow.command("scale_service", ScaleService, tool=scale_service, resource=service_resource)

# Each step's agent is a model when the deployment configures one (BEDROCK_MODEL_ID), and its
# scripted twin otherwise: the demo and the tests need no credentials. Either way it only proposes.
TRIAGE = ModelAgent(
    "triage",
    instructions=(
        "A service's p99 latency crossed its threshold. Propose collecting the service's latency "
        "diagnostics first; do not act on the service before it is diagnosed."
    ),
    fallback=ScriptedAgent("triage", _triage),
)
DIAGNOSTICIAN = ModelAgent(
    "diagnostician",
    instructions=(
        "The service's latency diagnostics are in. Propose checking its dependencies' error rates "
        "to find the one that is failing."
    ),
    fallback=ScriptedAgent("diagnostician", _diagnose),
)
PLANNER = ModelAgent(
    "planner",
    instructions=(
        "A dependency of the service is suspected of failing. Propose planning a recovery for the "
        "service, naming that dependency."
    ),
    fallback=ScriptedAgent("planner", _plan),
)
OPERATOR = ModelAgent(
    "operator",
    instructions=(
        "A recovery plan is ready. Propose scaling the service to the plan's desired count, "
        "from the count the plan was made from."
    ),
    fallback=ScriptedAgent("operator", _operate),
)

# Each step offers its agent one tool; decide refuses any other proposal and authorize denies it.
workflow.step(
    Step(
        on="ServiceLatencyIncreased",
        agent=TRIAGE,
        outcome="DiagnosisRequested",
        tools=("collect_diagnostics",),
    )
)
workflow.step(
    Step(
        on="DiagnosisRequested",
        agent=DIAGNOSTICIAN,
        outcome="DependencyFailureSuspected",
        tools=("check_dependencies",),
    )
)
workflow.step(
    Step(on="DependencyFailureSuspected", agent=PLANNER, outcome="RecoveryProposed", tools=("plan_recovery",))
)
workflow.step(
    Step(
        on="RecoveryProposed",
        agent=OPERATOR,
        outcome="RecoveryCompleted",
        final=True,
        tools=("scale_service",),
    )
)
