"""The incident workflow's tools make the fewest AWS calls: check_dependencies reads every dependency's
maximum in one GetMetricData call (after its ListMetrics), and scale_service lets UpdateService say
whether the service exists. The answers are the ones the earlier calls gave (GetMetricStatistics per
dependency; DescribeServices before the update), on moto."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from intentbus.definition import ToolContext, ToolError
from intentbus.workflows import incident
from tests.integration.conftest_moto import aws, client  # noqa: F401  (fixture)

CLUSTER = "shop"
SERVICE = "checkout-api"


@dataclass
class Counted:
    """A client whose calls are listed by operation name, in order."""

    inner: Any
    calls: list[str]

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.inner, name)

        def call(**kwargs: Any) -> Any:
            self.calls.append(name)
            return method(**kwargs)

        return call


@dataclass
class CountingClients:
    """A ``ToolContext.clients`` over moto that lists every call a tool makes."""

    calls: list[str] = field(default_factory=list)

    def client(self, service_name: str) -> Any:
        return Counted(client(service_name), self.calls)


def _context(clients: Any) -> ToolContext:
    return ToolContext(
        tenant_id="acme", run_id="run_calls", idempotency_key="idem_calls", clients=clients, settings={}
    )


def _ref(**extra: Any) -> dict[str, Any]:
    return {"service": SERVICE, "cluster": CLUSTER, "environment": "dev", **extra}


def _point(dependency: str, minutes_ago: float, value: float, service: str = SERVICE) -> dict[str, Any]:
    return {
        "MetricName": incident.DEPENDENCY_ERROR_METRIC,
        "Dimensions": [{"Name": "Service", "Value": service}, {"Name": "Dependency", "Value": dependency}],
        "Timestamp": datetime.now(UTC) - timedelta(minutes=minutes_ago),
        "Value": value,
    }


def _seeded_points() -> list[dict[str, Any]]:
    """The datapoints, placed relative to now when they are put (at import, a run under load could
    reach the tool minutes later, and the window would have slid past them)."""
    return [
        # several datapoints a dependency, in different minutes and in the same one
        _point("payments-db", 14, 0.12),
        _point("payments-db", 9, 0.41),
        _point("payments-db", 9, 0.2),
        _point("payments-db", 2, 0.3),
        _point("inventory-api", 7, 0.01),
        _point("inventory-api", 3, 0.02),
        # outside the 15-minute window, before it and after it: neither counts
        _point("inventory-api", 40, 0.97),
        _point("payments-db", -10, 0.99),
        # only outside the window: listed, no datapoints in it, so 0.0
        _point("search-index", 30, 0.8),
        # negative readings are compared as they are, not floored at zero
        _point("clock-skew", 6, -0.5),
        _point("clock-skew", 4, -0.25),
        # another service's dependency is not checkout-api's
        _point("payments-db", 5, 0.9, service="search-api"),
    ]


def _old_check_dependencies(service: str, minutes: int) -> dict[str, float]:
    """What the tool answered when it read each dependency with its own GetMetricStatistics call."""
    cloudwatch = client("cloudwatch")
    end = datetime.now(UTC)
    listed = cloudwatch.list_metrics(
        Namespace=incident.METRICS_NAMESPACE,
        MetricName=incident.DEPENDENCY_ERROR_METRIC,
        Dimensions=[{"Name": "Service", "Value": service}],
    )
    rates: dict[str, float] = {}
    for metric in listed["Metrics"]:
        dependency = {item["Name"]: item["Value"] for item in metric["Dimensions"]}.get("Dependency")
        if dependency:
            points = cloudwatch.get_metric_statistics(
                Namespace=incident.METRICS_NAMESPACE,
                MetricName=incident.DEPENDENCY_ERROR_METRIC,
                Dimensions=metric["Dimensions"],
                StartTime=end - timedelta(minutes=minutes),
                EndTime=end,
                Period=60,
                Statistics=["Maximum"],
            )["Datapoints"]
            rates[dependency] = max((float(point["Maximum"]) for point in points), default=0.0)
    return rates


@pytest.fixture
def seeded(aws: None) -> None:  # noqa: F811
    cloudwatch = client("cloudwatch")
    cloudwatch.put_metric_data(Namespace=incident.METRICS_NAMESPACE, MetricData=_seeded_points())
    ecs = client("ecs")
    ecs.create_cluster(clusterName=CLUSTER)
    ecs.register_task_definition(
        family=SERVICE, containerDefinitions=[{"name": "app", "image": "checkout:1", "memory": 256}]
    )
    ecs.create_service(cluster=CLUSTER, serviceName=SERVICE, taskDefinition=SERVICE, desiredCount=2)


@pytest.mark.parametrize("window_minutes", [15, 5])
def test_one_get_metric_data_answers_as_a_get_metric_statistics_per_dependency(
    seeded: None, window_minutes: int
) -> None:
    clients = CountingClients()
    result = incident.check_dependencies.run(
        incident.CheckDependencies(**_ref(window_minutes=window_minutes)), _context(clients)
    )

    old = _old_check_dependencies(SERVICE, window_minutes)
    assert result["checked"] == old  # the same floats, in the same order
    worst = max(old, key=lambda name: old[name])
    assert (result["dependency"], result["error_rate"]) == (worst, old[worst])
    assert clients.calls == ["list_metrics", "get_metric_data"]


def test_the_seeded_maxima(seeded: None) -> None:
    context = _context(CountingClients())
    result = incident.check_dependencies.run(incident.CheckDependencies(**_ref()), context)

    assert result["checked"] == {
        "payments-db": 0.41,
        "inventory-api": 0.02,
        "search-index": 0.0,
        "clock-skew": -0.25,
    }
    assert (result["dependency"], result["error_rate"]) == ("payments-db", 0.41)


def test_scale_service_makes_one_call_and_a_missing_service_is_still_permanent(seeded: None) -> None:
    clients = CountingClients()
    result = incident.scale_service.run(
        incident.ScaleService(**_ref(desired_count=4, from_count=2)), _context(clients)
    )
    assert result == {**_ref(desired_count=4), "previous_count": 2}
    assert clients.calls == ["update_service"]

    with pytest.raises(ToolError, match="ECS service ghost-api not found in shop") as raised:
        incident.scale_service.run(
            incident.ScaleService(**_ref(service="ghost-api", desired_count=4, from_count=2)),
            _context(clients),
        )
    assert raised.value.retryable is False
    assert clients.calls == ["update_service", "update_service"]


# ------------------------------------------------------------------ fakes: what moto never answers


class _PagedCloudWatch:
    """GetMetricData answering in pages, each page holding part of every metric's datapoints."""

    def __init__(self, dependencies: int, pages: int = 2, status: str = "Complete") -> None:
        self.dependencies = dependencies
        self.pages = pages
        self.status = status
        self.requests: list[dict[str, Any]] = []

    def list_metrics(self, **kwargs: Any) -> dict[str, Any]:
        service = kwargs["Dimensions"][0]["Value"]
        return {
            "Metrics": [
                {
                    "Dimensions": [
                        {"Name": "Service", "Value": service},
                        {"Name": "Dependency", "Value": f"dep-{number}"},
                    ]
                }
                for number in range(self.dependencies)
            ]
        }

    def get_metric_data(self, **kwargs: Any) -> dict[str, Any]:
        self.requests.append(kwargs)
        page = int(kwargs.get("NextToken", "0"))
        results = []
        for query in kwargs["MetricDataQueries"]:
            dependency = query["MetricStat"]["Metric"]["Dimensions"][1]["Value"]
            number = int(dependency.split("-")[1])
            # the maximum is on the first page for even dependencies, on the last for odd ones
            peak = number % 2 == (0 if page == 0 else 1)
            values = [number / 1000 + 1.0] if peak else [number / 1000]
            results.append(
                {"Id": query["Id"], "Label": "not parsed", "Values": values, "StatusCode": self.status}
            )
        more = page + 1 < self.pages
        return {"MetricDataResults": results, **({"NextToken": str(page + 1)} if more else {})}


@dataclass
class _Clients:
    cloudwatch: Any

    def client(self, service_name: str) -> Any:
        assert service_name == "cloudwatch"
        return self.cloudwatch


def test_more_than_500_dependencies_take_one_call_per_500_and_their_pages() -> None:
    cloudwatch = _PagedCloudWatch(dependencies=1203, pages=2)

    result = incident.check_dependencies.run(
        incident.CheckDependencies(**_ref()), _context(_Clients(cloudwatch))
    )

    sizes = [len(request["MetricDataQueries"]) for request in cloudwatch.requests]
    assert sizes == [500, 500, 500, 500, 203, 203]
    assert [request.get("NextToken") for request in cloudwatch.requests] == [None, "1"] * 3
    ids = [query["Id"] for request in cloudwatch.requests[::2] for query in request["MetricDataQueries"]]
    assert len(set(ids)) == 1203
    assert all(query_id[0].islower() and query_id.isalnum() for query_id in ids)
    assert result["checked"] == {f"dep-{n}": n / 1000 + 1.0 for n in range(1203)}
    assert (result["dependency"], result["error_rate"]) == ("dep-1202", 1.202 + 1.0)


@pytest.mark.parametrize(("status", "retryable"), [("InternalError", True), ("Forbidden", False)])
def test_a_metric_the_service_could_not_read_fails_the_tool(status: str, retryable: bool) -> None:
    with pytest.raises(ToolError, match=f"reading DependencyErrorRate failed: {status}") as raised:
        incident.check_dependencies.run(
            incident.CheckDependencies(**_ref()),
            _context(_Clients(_PagedCloudWatch(dependencies=3, pages=1, status=status))),
        )
    assert raised.value.retryable is retryable


class _Ecs:
    def __init__(self, code: str, message: str) -> None:
        self.error = ClientError({"Error": {"Code": code, "Message": message}}, "UpdateService")

    def update_service(self, **kwargs: Any) -> dict[str, Any]:
        raise self.error


@dataclass
class _EcsClients:
    ecs: _Ecs

    def client(self, service_name: str) -> Any:
        assert service_name == "ecs"
        return self.ecs


@pytest.mark.parametrize(
    ("code", "message", "expected", "retryable"),
    [
        ("ServiceNotFoundException", "Service not found.", f"ECS service {SERVICE} not found in shop", False),
        ("ServiceNotActiveException", "Service was not ACTIVE.", f"ECS service {SERVICE} not found", False),
        # by code, never by message text: a throttled call that says "not found" is retried
        ("ThrottlingException", "service not found", "scaling shop/checkout-api failed: Throttling", True),
        (
            "ClusterNotFoundException",
            "Cluster not found.",
            "scaling shop/checkout-api failed: Cluster",
            False,
        ),
    ],
)
def test_update_service_errors_by_their_code(code: str, message: str, expected: str, retryable: bool) -> None:
    with pytest.raises(ToolError, match=expected) as raised:
        incident.scale_service.run(
            incident.ScaleService(**_ref(desired_count=4, from_count=2)),
            _context(_EcsClients(_Ecs(code, message))),
        )
    assert raised.value.retryable is retryable
