"""Runs the incident workflow on the in-process local cloud with ``TracingBackend`` = argv[1] in a fresh
interpreter, then prints which tracing SDK packages that interpreter loaded (JSON).

For ``otel`` the spans go to an in-memory exporter set up before the first invocation (as the ADOT
layer's auto-instrumentation would set the provider), so nothing is sent anywhere.
"""

from __future__ import annotations

import json
import sys

from intentbus_local import seed
from intentbus_local.cloud import LocalCloud

TRACING_SDKS = ("opentelemetry", "aws_xray_sdk")


def main(backend: str) -> None:
    if backend == "otel":
        from opentelemetry import trace
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from intentbus.otel_spans import new_provider

        trace.set_tracer_provider(new_provider(InMemorySpanExporter(), batched=False))
    with LocalCloud(mode="inprocess", parameters={"TracingBackend": backend}) as cloud:
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        event = seed.latency_event()
        entry = {"Source": "monitoring.example", "DetailType": event["type"], "Detail": json.dumps(event)}
        cloud.put_events([entry])
        assert cloud.run_until_idle(max_invocations=100).idle
        assert seed.desired_count(cloud.clients) == 4, "the workflow ran to its end"
    loaded = {name.split(".")[0] for name in sys.modules if name.startswith(TRACING_SDKS)}
    print(json.dumps(sorted(loaded)))


if __name__ == "__main__":
    main(sys.argv[1])
