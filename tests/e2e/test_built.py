"""What is deployed, run locally: ``sam build`` of template.yaml for this machine's architecture (the
build check covers arm64, which this machine cannot load), then the local cloud's built mode, where each
function runs in a process of its own that imports only from the build and the runtime's boto3."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore
from intentbus.state import Status
from intentbus_build.built_template import read_build
from intentbus_build.check import check
from intentbus_build.lambda_python import host_architecture
from intentbus_cli.main import main
from intentbus_local import rabbitmq_ingress, seed
from intentbus_local.built_runtime import BuiltRuntime
from intentbus_local.cloud import LocalCloud
from intentbus_local.rabbitmq_mapping import mq_mappings

pytestmark = [pytest.mark.e2e, pytest.mark.packaging]

REPO = Path(__file__).resolve().parents[2]
SAM = REPO / ".venv-sam" / "bin" / "sam"
SOURCE_TREE = (REPO / "shared", REPO / "functions", REPO / "infra", REPO / ".venv")
EVENTS = REPO / "infra" / "events" / "sample.jsonl"


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build per session, into a temporary directory (never the working tree's .aws-sam)."""
    architecture = host_architecture()
    assert architecture is not None, "this machine has no Lambda architecture to build for"
    assert SAM.exists(), f"no SAM CLI at {SAM}: 'make .venv-sam/.installed' installs it (make test does)"
    build_dir = tmp_path_factory.mktemp("sam") / "build"
    # A make above this test (make test) must not hand its variables to the layer's Makefile.
    environment = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    environment.update(SAM_CLI_TELEMETRY="0", ARCHITECTURE=architecture)
    result = subprocess.run(
        [
            str(SAM),
            "build",
            "--no-cached",
            "--template-file",
            str(REPO / "template.yaml"),
            "--build-dir",
            str(build_dir),
            "--parameter-overrides",
            f"Architecture={architecture}",
        ],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    report = check(read_build(build_dir, {"Architecture": architecture}))
    assert report.problems == []
    return build_dir


def test_the_incident_runs_to_recovery_on_the_built_artifacts(built: Path, tmp_path: Path) -> None:
    with LocalCloud(mode="server", built=built, logs_dir=tmp_path / "logs") as cloud:
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        event = seed.latency_event()
        cloud.put_events(
            [{"Source": str(event["source"]), "DetailType": str(event["type"]), "Detail": json.dumps(event)}]
        )
        summary = cloud.run_until_idle(max_invocations=100)

        assert summary.idle
        assert seed.desired_count(cloud.clients) == 4
        store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        (run,) = store.runs(str(event["tenant_id"]))
        assert run.status is Status.COMPLETED
        entries = store.entries(run.tenant_id, run.run_id)
        assert [e.input_type for e in entries if e.stage == "validate"] == ["ServiceLatencyIncreased"]
        # the run's last outcome (RecoveryCompleted) goes to no stage: the built record marked it so
        assert [e.input_type for e in entries if e.stage == "decide"][-1] == "RecoveryProposed"
        assert [e.input_type for e in entries][-1] == "CommandExecuted"

        runtime = cloud.runtime
        assert isinstance(runtime, BuiltRuntime)
        invoked = [function for function, count in summary.invocations.items() if count]
        assert set(invoked) == {
            f"{s}Function" for s in ("Validate", "Decide", "Authorize", "Execute", "Record")
        }
        for function in invoked:
            state = runtime.describe(function)
            assert state.modules["intentbus"] == str(
                built / "IntentbusLayer" / "python" / "intentbus" / "__init__.py"
            )
            assert state.modules["app"] == str(built / function / "app.py")
            assert state.modules["botocore"].startswith(str(runtime.sdk_dir))
            allowed = (
                str(built),
                str(runtime.sdk_dir.parent),
                *state.sys_path[4:],
            )  # [4:]: the standard library
            assert [f for f in state.modules.values() if not f.startswith(allowed)] == []
            assert [f for f in state.modules.values() if f.startswith(tuple(map(str, SOURCE_TREE)))] == []


def test_the_built_rabbitmq_ingress_starts_a_run_and_quarantines_a_body_claiming_the_pipeline(
    built: Path, tmp_path: Path
) -> None:
    """The Amazon MQ ingress as built (its own function, the layer), fed the aws:rmq event Lambda's
    mapping sends. Attack next to it: a message whose body claims the pipeline's own source is
    quarantined with the reason, and its batch neighbour still starts its run."""
    queue = rabbitmq_ingress.new_queue()
    with LocalCloud(
        mode="server",
        built=built,
        logs_dir=tmp_path / "logs",
        parameters=rabbitmq_ingress.stack_parameters(queue),
    ) as cloud:
        seed.seed_service(cloud.clients)
        seed.seed_metrics(cloud.clients)
        (mapping,) = mq_mappings(cloud)
        incident = seed.latency_event()
        forged = {**seed.latency_event(), "source": "intentbus.pipeline"}
        messages = [
            {
                "basicProperties": {"contentType": "application/json", "messageId": message_id},
                "redelivered": False,
                "data": base64.b64encode(json.dumps(body).encode()).decode(),
            }
            for message_id, body in (("m-forged", forged), ("m-incident", incident))
        ]
        event = {
            "eventSource": "aws:rmq",
            "eventSourceArn": mapping.broker_arn,
            "rmqMessagesByQueue": {mapping.key: messages},
        }

        invocation = cloud.invoke(mapping.function_logical_id, event)
        summary = cloud.run_until_idle(max_invocations=100)

        assert not invocation.failed, invocation.error
        assert summary.idle
        (quarantined,) = [json.loads(m.body) for m in cloud.queue_messages("QuarantineQueue")]
        assert quarantined["source_message_id"] == "m-forged"
        assert "reserved for the pipeline" in quarantined["reason"]
        store = DynamoWorkflowStore(cloud.topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        (run,) = store.runs(str(incident["tenant_id"]))
        assert run.status is Status.COMPLETED
        assert seed.desired_count(cloud.clients) == 4
        runtime = cloud.runtime
        assert isinstance(runtime, BuiltRuntime)
        state = runtime.describe(mapping.function_logical_id)
        assert state.modules["intentbus"] == str(
            built / "IntentbusLayer" / "python" / "intentbus" / "__init__.py"
        )
        assert state.modules["app"] == str(built / mapping.function_logical_id / "app.py")


def test_local_run_built_reports_where_every_input_ended(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_path = tmp_path / "report.json"

    code = main(
        [
            "local",
            "run",
            "--built",
            str(built),
            "--events",
            str(EVENTS),
            "--seed-demo",
            "--report",
            str(report_path),
        ]
    )

    assert code == 0
    report = json.loads(report_path.read_text())
    assert [item["bucket"] for item in report["inputs"]] == [
        "applied",
        "duplicate",
        "applied",
        "denied",
        "applied",
        "quarantined",
        "quarantined",
    ]
    assert sorted((run["workflow"], run["status"]) for run in report["workflows"]) == [
        ("direct_tool_call", "COMPLETED"),
        ("direct_tool_call", "COMPLETED"),
        ("incident_response", "COMPLETED"),
        ("incident_response", "DENIED"),
    ]
    assert "3 applied, 1 denied, 1 duplicate, 2 quarantined" in capsys.readouterr().out


def test_the_built_layer_ships_every_intentbus_module_compiled_with_unchecked_hash_bytecode(
    built: Path,
) -> None:
    """Lambda's /opt is read-only: a module without usable bytecode is compiled at every cold start."""
    package = built / "IntentbusLayer" / "python" / "intentbus"
    modules = sorted(package.rglob("*.py"))
    assert len(modules) > 50
    missing, checked = [], []
    for module in modules:
        compiled = Path(importlib.util.cache_from_source(str(module)))
        if not compiled.exists():
            missing.append(module.relative_to(package))
            continue
        flags = int.from_bytes(compiled.read_bytes()[4:8], "little")  # PEP 552: 0b01 hash-based, 0b10 checked
        if flags != 0b01:
            checked.append(module.relative_to(package))
    assert missing == []
    assert checked == []
