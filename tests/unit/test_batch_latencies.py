"""A batch's ``latency`` values added at its end write the EMF documents a call per record would have."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

from intentbus import telemetry


def _provider() -> AmazonCloudWatchEMFProvider:
    return AmazonCloudWatchEMFProvider(
        namespace="intentbus-unit", service="unit", metric_set={}, dimension_set={}, metadata_set={}
    )


def _as_metrics(sink: object) -> Metrics:
    return cast("Metrics", sink)


def _documents(provider: AmazonCloudWatchEMFProvider, printed: str) -> list[dict[str, Any]]:
    """Every EMF document written (at 100 values) and the one left to write, less their timestamps."""
    documents = [json.loads(line) for line in printed.splitlines() if line.strip()]
    if provider.metric_set:
        documents.append(dict(provider.serialize_metric_set()))
    for document in documents:
        document["_aws"].pop("Timestamp", None)
    return documents


@pytest.mark.parametrize("count", [0, 1, 3, 10, 98, 99, 100, 101, 199, 250])
def test_a_batch_adds_the_documents_a_call_per_record_would(
    count: int, capsys: pytest.CaptureFixture[str]
) -> None:
    values = [round(0.5 + index * 0.137, 3) for index in range(count)]

    one_by_one = _provider()
    one_by_one.add_dimension(name="stage", value="decide")
    for value in values:
        telemetry.add_latency(_as_metrics(one_by_one), value)
    expected = _documents(one_by_one, capsys.readouterr().out)

    together = _provider()
    together.add_dimension(name="stage", value="decide")
    latencies = telemetry.BatchLatencies()
    for value in values:
        latencies.add(value)
    latencies.add_to(_as_metrics(together))
    assert _documents(together, capsys.readouterr().out) == expected
    assert sum(len(document.get("latency", [])) for document in expected) == count
    assert all(len(document.get("latency", [])) <= telemetry.MAX_VALUES for document in expected)


def test_values_join_those_the_document_already_holds(capsys: pytest.CaptureFixture[str]) -> None:
    provider = _provider()
    for value in range(60):
        provider.add_metric(name="latency", unit=MetricUnit.Milliseconds, value=value)
    telemetry.add_values(
        _as_metrics(provider), "latency", MetricUnit.Milliseconds, [float(value) for value in range(60, 130)]
    )
    (written,) = _documents(provider, capsys.readouterr().out)[:1]
    assert written["latency"] == [float(value) for value in range(100)]
    assert provider.metric_set["latency"]["Value"] == [float(value) for value in range(100, 130)]


class _Plain:
    """A metrics sink that keeps no value lists: given each value by a call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []

    def add_metric(self, name: str, unit: MetricUnit, value: float) -> None:
        self.calls.append((name, value))


def test_a_sink_without_value_lists_gets_a_call_per_value() -> None:
    sink = _Plain()
    telemetry.add_values(_as_metrics(sink), "latency", MetricUnit.Milliseconds, [1.0, 2.5, 3.25])
    assert sink.calls == [("latency", 1.0), ("latency", 2.5), ("latency", 3.25)]


def test_a_batch_starts_empty_once_added() -> None:
    provider = _provider()
    latencies = telemetry.BatchLatencies()
    latencies.add(1.23456)
    latencies.add_to(_as_metrics(provider))
    latencies.add_to(_as_metrics(provider))
    assert provider.metric_set["latency"]["Value"] == [1.235]
