"""The CLI's local-cloud commands; they need the ``local`` extra (moto, samtranslator, cfn-lint)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from intentbus.catalog import Catalog
    from intentbus_cli.project import Project
    from intentbus_local.cloud import LocalCloud, RunSummary
    from intentbus_local.report import RunReport

Mode = Literal["server", "inprocess"]


def demo(
    project: Project, *, mode: Mode, environment: str, decision: Literal["approve", "reject"] | None
) -> int:
    from intentbus.catalog import Catalog
    from intentbus.errors import ConfigurationError
    from intentbus_cli.demo import INCIDENT_WORKFLOW, run, terminal_prompt

    if INCIDENT_WORKFLOW not in Catalog.from_modules(project.workflows).workflows:
        raise ConfigurationError(
            f"the demo runs the {INCIDENT_WORKFLOW} workflow, which {project.workflows!r} does not register: "
            "add intentbus.workflows.incident to --workflows, or run it where there is no template.yaml"
        )
    result = run(
        mode=mode,
        environment=environment,
        decision=decision,
        ask=terminal_prompt(),
        template_path=project.template,
        workflows=project.workflows,
    )
    if not result.succeeded:
        print("demo: the run did not complete as expected")
        return 1
    return 0


def run_events(
    project: Project,
    events: Path,
    *,
    report: Path | None,
    mode: Mode,
    environment: str,
    seed_demo: bool = False,
    built: Path | None = None,
    redeploy: Mapping[str, str] | None = None,
    redeploy_template: Path | None = None,
    then_events: Path | None = None,
    ingress: Literal["bus", "rabbitmq"] = "bus",
    rabbitmq_url: str | None = None,
) -> int:
    """Emits ``events`` and runs until nothing is in flight. With ``redeploy`` (parameters) or
    ``redeploy_template``, the stack is then redeployed with them, ``then_events`` are emitted and it runs
    until idle again: whatever waits (approvals, reviews) crosses the redeploy. The report of the first
    events is read at the very end, so it tells how their runs ended after the redeploy too.
    ``built``: a sam build directory to run instead of the source tree (needs ``mode="server"``).
    ``ingress`` "rabbitmq": the events go through a real RabbitMQ (``rabbitmq_url``, or one started on a
    free port) and the template's Amazon MQ mapping (intentbus_local.rabbitmq_ingress), not the bus."""
    from intentbus_cli.emit import read_envelopes
    from intentbus_local import report as reporting
    from intentbus_local import seed
    from intentbus_local.cloud import LocalCloud

    first = list(read_envelopes(events))
    later = list(read_envelopes(then_events)) if then_events is not None else []
    redeploying = bool(redeploy) or redeploy_template is not None
    if project.seeded and built is None:
        print(f"no ./template.yaml here: running the seed template ({project.template})")
    parameters = {"Environment": environment, "Workflows": project.workflows}
    template_path = None if built is not None else project.template
    from intentbus_cli.project import read_parameters as project_parameters
    from intentbus_local import rabbitmq_ingress

    queue = rabbitmq_ingress.new_queue()
    if ingress == "rabbitmq":
        declared = project_parameters(project.template)
        parameters |= rabbitmq_ingress.stack_parameters(queue, declared=declared)
    broker = rabbitmq_ingress.broker(rabbitmq_url) if ingress == "rabbitmq" else contextlib.nullcontext(None)
    with (
        broker as url,
        LocalCloud(mode=mode, parameters=parameters, built=built, template_path=template_path) as cloud,
    ):
        if seed_demo:
            seed.seed_service(cloud.clients)
            seed.seed_metrics(cloud.clients)
        sent = _emit(cloud, first) if url is None else rabbitmq_ingress.emit(cloud, url, queue, first)
        batches = [(_catalog(cloud), sent)]
        summary = _run(cloud, len(first))
        if redeploying:
            cloud.redeploy(parameters=redeploy, template=redeploy_template)
            print(f"redeployed: {_describe(redeploy, redeploy_template)}")
            batches.append((_catalog(cloud), _emit(cloud, later, title="local run (after the redeploy)")))
            summary = _run(cloud, len(first) + len(later), title="local run (after the redeploy)")
        results = [reporting.build(cloud, catalog, sent) for catalog, sent in batches]
    counts = _print_report(results, summary)
    if report is not None:
        if len(results) == 1:
            reporting.write(results[0], report)
        else:
            before, after = (json.loads(result.to_json()) for result in results)
            both = {"before_redeploy": before, "after_redeploy": after}
            report.write_text(json.dumps(both, indent=2, sort_keys=True) + "\n")
    return 0 if summary.idle and "lost" not in counts else 1


def _print_report(results: list[RunReport], summary: RunSummary) -> dict[str, int]:
    """Where each input ended, then each run; returns the count of inputs per bucket."""
    for title, result in zip(("", "after the redeploy: "), results, strict=False):
        for item in result.inputs:
            where = f"{item.type or '?'} {item.event_id or ''}".strip()
            reason = f" — {item.reason}" if item.reason else ""
            print(f"{title}line {item.line}: {item.bucket:<11} {where}{reason}")
    runs = {(w["tenant_id"], w["run_id"]): w for result in results for w in result.workflows}
    for workflow in runs.values():
        reason = f" — {workflow['reason']}" if workflow.get("reason") else ""
        print(f"run {workflow['run_id']} ({workflow['workflow']}): {workflow['status']}{reason}")
    counts: dict[str, int] = {}
    for result in results:
        for bucket, count in result.counts.items():
            counts[bucket] = counts.get(bucket, 0) + count
    print(
        ", ".join(f"{count} {bucket}" for bucket, count in sorted(counts.items()))
        + f"; {summary.total_invocations} invocations"
        + ("" if summary.idle else f"; NOT IDLE: {summary.stop_reason}")
    )
    return counts


def _catalog(cloud: LocalCloud) -> Catalog:
    """The workflows the stack registers now (the validate function's, as the template resolves it)."""
    from intentbus.catalog import Catalog

    validate = cloud.topology.functions["ValidateFunction"]
    return Catalog.from_modules(validate.environment["INTENTBUS_WORKFLOWS"])


Sent = list[tuple[int, dict[str, Any], str, str]]
"""(line, envelope, bus event id, source) of every input emitted."""


def _emit(cloud: LocalCloud, lines: list[tuple[int, dict[str, Any]]], *, title: str = "local run") -> Sent:
    """On the ingress bus, as a producer: up to ten inputs per PutEvents, as many as fit its size limit."""
    from intentbus_cli.progress import Progress

    sent: Sent = []
    with Progress(f"{title}: sending", total=len(lines), unit="inputs sent") as progress:
        for group in _put_events_groups([(line, _bus_entry(line[1])) for line in lines]):
            bus_event_ids = cloud.put_events([entry for _, entry in group])
            for ((number, envelope), entry), bus_event_id in zip(group, bus_event_ids, strict=True):
                sent.append((number, envelope, bus_event_id, entry["Source"]))
            progress.update(advance=len(group))
    return sent


def _bus_entry(envelope: Mapping[str, Any]) -> dict[str, str]:
    source = str(envelope.get("source", "intentbus.cli"))  # emit's default source too
    detail_type = str(envelope.get("type", envelope.get("event_type", "Unknown")))
    return {"Source": source, "DetailType": detail_type, "Detail": json.dumps(envelope)}


_Line = tuple[int, dict[str, Any]]


def _put_events_groups(
    entries: list[tuple[_Line, dict[str, str]]],
) -> list[list[tuple[_Line, dict[str, str]]]]:
    """Consecutive (line, entry) pairs, at most ten a group and a group's entries within PutEvents' size
    limit together; an entry over the limit by itself goes alone (and is refused alone)."""
    from intentbus.limits import PUT_EVENTS_LIMIT_BYTES, entry_size
    from intentbus_local.cloud import PUT_EVENTS_MAX_ENTRIES

    groups: list[list[tuple[_Line, dict[str, str]]]] = []
    size = 0
    for item in entries:
        item_size = entry_size(item[1])
        full = len(groups[-1]) == PUT_EVENTS_MAX_ENTRIES if groups else True
        if full or size + item_size > PUT_EVENTS_LIMIT_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += item_size
    return groups


def _run(cloud: LocalCloud, inputs: int, *, title: str = "local run") -> RunSummary:
    """Until idle, with progress: the inputs out of every stage queue, and what each stage holds."""
    from intentbus_cli.progress import Progress, watch_pipeline

    with Progress(title, total=inputs, unit="inputs done") as progress:
        stop_watching = watch_pipeline(cloud, progress, inputs=inputs)
        try:
            summary = cloud.run_until_idle(
                max_invocations=20 * inputs + 100, deadline_seconds=600, raise_on_limit=False
            )
        finally:
            stop_watching()
        if summary.idle:
            progress.update(done=inputs, detail="")
    return summary


def _describe(parameters: Mapping[str, str] | None, template: Path | None) -> str:
    said = [f"{name}={value}" for name, value in (parameters or {}).items()]
    if template is not None:
        said.append(f"template {template}")
    return ", ".join(said)
