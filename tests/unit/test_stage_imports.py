"""What a stage's Lambda entry imports at its cold start leaves out what the stage never uses.

The five entries are imported in one fresh interpreter, as Lambda imports each. Two regressions cost tens of
milliseconds each and show nowhere else: boto3 (with s3transfer) where botocore serves, and Powertools'
parser models for every other event source, which Powertools' batch utility imports whenever pydantic
is already loaded when it is first imported (``utilities/batch/types.py``). Nor Powertools' parser package
at all (its ``parse`` functions import pydantic's network types and ``TypeAdapter``, ~12 M instructions):
the EventBridge event model is ``intentbus.bus_event``'s. Nor does it import what only a
refused input needs (the validation-error reader), nor the approval model, which only a command that
needs a person (authorize) and the approvals service make or read, nor the approval backlog's figures
(the expiry sweep's), nor the execution guard's claim types (execute's core loads them), nor a claim
check's reference (only a payload too large to publish makes one), nor the Bedrock settings (only a
deployment with a model): each class a module creates costs a cold start, a dataclass some 4 M
instructions, a model with its validator deferred 1-2 M.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("validate", "decide", "authorize", "execute", "record")
NEVER_AT_IMPORT = (
    "boto3",
    "s3transfer",
    "aws_lambda_powertools.utilities.parser",
    "pydantic.networks",
    "pydantic.type_adapter",
    "intentbus.cloudevent",
    "intentbus.workflows",
    "intentbus.validation_errors",
    "intentbus.facts.",
    "intentbus.approval_record",
    "intentbus.approval_backlog",
    "intentbus.execution_claim",
    "intentbus.claim_reference",
    "intentbus.bedrock_settings",
)

_PROBE = """
import json, runpy, sys
for path in sys.argv[1:]:
    runpy.run_path(path)
print(json.dumps(sorted(sys.modules)))
"""


def _probe(code: str, *arguments: str, paths: tuple[Path, ...] = (ROOT / "shared",), **environ: str) -> Any:
    """What ``code``, run in a fresh interpreter on ``paths``, prints as JSON on its last line."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(str(path) for path in paths),
        **environ,
    }
    ran = subprocess.run(
        [sys.executable, "-c", code, *arguments],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(ran.stdout.splitlines()[-1])


def _imported_by_the_stages() -> set[str]:
    modules: list[str] = _probe(
        _PROBE,
        *(str(ROOT / "functions" / stage / "app.py") for stage in STAGES),
        AWS_DEFAULT_REGION="us-east-1",
        TRACING_BACKEND="off",
        POWERTOOLS_TRACE_DISABLED="true",
    )
    return set(modules)


def test_no_stage_imports_what_it_does_not_use() -> None:
    imported = _imported_by_the_stages()

    assert sorted(name for name in imported if name.startswith(NEVER_AT_IMPORT)) == []
    assert "intentbus.handler" in imported, "the entries were imported"


_IDEMPOTENCY_PROBE = """
import json, sys
import intentbus.stages.execute
from intentbus.adapters.idempotency import DynamoDBPersistenceLayer
from botocore.session import get_session
client = get_session().create_client("dynamodb", region_name="us-east-1")
layer = DynamoDBPersistenceLayer(table_name="idempotency", boto3_client=client)
heavy = ("boto3", "s3transfer", "multiprocessing", "intentbus.failure_review")
at_first_record = sorted(name for name in sys.modules if name.startswith(heavy))
item = {"id": {"S": "k"}, "status": {"S": "COMPLETED"}, "expiration": {"N": "4102444800"}}
record = layer._item_to_data_record(item)
import boto3
print(json.dumps({
    "at_first_record": at_first_record,
    "asks_for_old_item": layer.return_value_on_condition,
    "record": [record.idempotency_key, record.status, str(record.expiry_timestamp)],
    "boto3_is_real": type(boto3) is type(sys) and hasattr(boto3, "Session"),
}))
"""


def test_execute_loads_powertools_idempotency_without_boto3() -> None:
    """Powertools' DynamoDB layer behaves as with boto3 (version check, reading a record back), yet the
    execute stage's first record imports neither boto3 nor s3transfer nor multiprocessing (nor the failure
    review, needed on a last attempt only); a later ``import boto3`` is the real one."""
    seen = _probe(_IDEMPOTENCY_PROBE, AWS_LAMBDA_FUNCTION_NAME="execute")

    assert seen["at_first_record"] == []
    assert seen["asks_for_old_item"] == {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    assert seen["record"] == ["k", "COMPLETED", "4102444800"]
    assert seen["boto3_is_real"] is True


_CLOUDEVENT_PROBE = """
import json, sys
from intentbus.catalog import Catalog
from intentbus.inbound import normalize, parse_bus_event
from intentbus.workflows import incident
from tests.fakes import raw_body

types = Catalog([incident.workflow]).types
payload = {
    "service": "checkout-api", "cluster": "shop", "environment": "dev", "p99_ms": 900, "threshold_ms": 300,
}
native = {"id": "evt-1", "type": "ServiceLatencyIncreased", "tenant_id": "acme", "payload": payload}
cloudevent = {
    "specversion": "1.0", "id": "ce-1", "source": "monitoring.example", "type": "ServiceLatencyIncreased",
    "tenantid": "acme", "data": payload,
}
seen = {}
for name, detail in (("native", native), ("cloudevent", cloudevent)):
    envelope, _ = normalize(parse_bus_event(raw_body(detail, detail_type=detail["type"])), types)
    loaded = "intentbus.cloudevent" in sys.modules
    seen[name] = {"p99_ms": envelope.payload["p99_ms"], "reader_loaded": loaded}
print(json.dumps(seen))
"""


def test_validate_loads_the_cloudevents_reader_only_for_a_cloudevent() -> None:
    """A native envelope, the common input, is accepted without the CloudEvents reader (~1 ms of a cold
    start); the first CloudEvent loads it and is read as before."""
    seen = _probe(_CLOUDEVENT_PROBE, paths=(ROOT, ROOT / "shared"))

    assert seen["native"] == {"p99_ms": 900.0, "reader_loaded": False}
    assert seen["cloudevent"] == {"p99_ms": 900.0, "reader_loaded": True}


def test_decide_loads_the_raw_output_keeper_only_for_a_rejected_decision() -> None:
    """decide's core imports ``intentbus.model_output`` only when a decision is rejected (~1 ms of a cold
    start otherwise)."""
    probe = "import json, sys, intentbus.stages.decide; print(json.dumps(sorted(sys.modules)))"

    assert "intentbus.model_output" not in _probe(probe)


_BUILT_MODELS_PROBE = """
import json, runpy, sys
for path in sys.argv[1:]:
    runpy.run_path(path)
from pydantic import BaseModel
seen, pending, built = set(), [BaseModel], []
while pending:
    for model in pending.pop().__subclasses__():
        if model not in seen:
            seen.add(model)
            pending.append(model)
            if model.__module__.startswith("intentbus") and model.__pydantic_complete__:
                built.append(f"{model.__module__}.{model.__qualname__}")
deferred = sorted(f"{m.__module__}.{m.__qualname__}" for m in seen if not m.__pydantic_complete__)
print(json.dumps({"built": sorted(built), "deferred": deferred}))
"""

BUILT_AT_IMPORT = (
    "intentbus.bus_event.EventBridgeModel",
    "intentbus.envelope.Envelope",
)
"""The only models whose validators the entries' imports build: every stage's first record validates both
(its input's EventBridge event and envelope). The settings are read by hand when every value is plain
(``intentbus.config.plainly_valid``), so their validator is built only for a value that needs it. Every
other model (facts, journal entries, approvals, states, policies, a workflow's payloads) is built on its
first validation (``defer_build``), so a stage pays only for the models it uses: building one costs
0.2-4 ms of a cold start."""


def test_the_entries_build_no_model_but_the_event_and_the_envelope() -> None:
    seen = _probe(
        _BUILT_MODELS_PROBE,
        *(str(ROOT / "functions" / stage / "app.py") for stage in STAGES),
        AWS_DEFAULT_REGION="us-east-1",
        TRACING_BACKEND="off",
        POWERTOOLS_TRACE_DISABLED="true",
    )

    assert seen["built"] == sorted(BUILT_AT_IMPORT)
    assert "intentbus.journal.LogEntry" in seen["deferred"], "the entries' models were imported"


_SETTINGS_PROBE = """
import json, os, runpy, sys
os.environ.update(json.loads(sys.argv[1]))
for path in sys.argv[2:]:
    runpy.run_path(path)
from intentbus.config import Settings
from intentbus.runtime import Runtime
runtime = Runtime.from_env()
print(json.dumps({"built": Settings.__pydantic_complete__, "table": runtime.settings.idempotency_table}))
"""


def test_a_stage_reads_the_templates_settings_without_building_their_validator() -> None:
    """A cold start's settings from the template's environment cost no validator (~21 M instructions)."""
    from tests.unit.test_settings_plain_values import TEMPLATE

    seen = _probe(
        _SETTINGS_PROBE,
        json.dumps({**TEMPLATE, "TRACING_BACKEND": "off"}),
        *(str(ROOT / "functions" / stage / "app.py") for stage in STAGES),
        AWS_DEFAULT_REGION="us-east-1",
        POWERTOOLS_TRACE_DISABLED="true",
    )

    assert seen == {"built": False, "table": TEMPLATE["IDEMPOTENCY_TABLE"]}


_POLICIES_PROBE = """
import json, os, runpy, sys
os.environ.update(json.loads(sys.argv[1]))
for path in sys.argv[2:]:
    runpy.run_path(path)
from intentbus.policy import Limit, Policy, Rule
from intentbus.runtime import Runtime
runtime = Runtime.from_env()
workflows = runtime.deps.catalog.workflows
print(json.dumps({
    "built": [model.__name__ for model in (Limit, Rule, Policy) if model.__pydantic_complete__],
    "rules": sorted(rule.id for workflow in workflows.values() for rule in workflow.policy.rules),
}))
"""


def test_a_stage_makes_the_workflows_policies_without_building_their_validators() -> None:
    """The workflows' policies, made at their import in every stage though only authorize evaluates them,
    cost no validator (~5 M instructions of each cold start): ``intentbus.policy`` fills them by hand."""
    from tests.unit.test_settings_plain_values import TEMPLATE

    seen = _probe(
        _POLICIES_PROBE,
        json.dumps({**TEMPLATE, "TRACING_BACKEND": "off"}),
        *(str(ROOT / "functions" / stage / "app.py") for stage in STAGES),
        AWS_DEFAULT_REGION="us-east-1",
        POWERTOOLS_TRACE_DISABLED="true",
    )

    assert seen["built"] == []
    assert "scale-production-needs-approval" in seen["rules"]
    assert "crm-upsert" in seen["rules"]


_RUN_STATE_PROBE = """
import json, os, runpy, sys
os.environ.update(json.loads(sys.argv[1]))
runpy.run_path(sys.argv[2])
from intentbus.runtime import Runtime
import intentbus.adapters.dynamodb_guard
runtime = Runtime.from_env()
import intentbus.stages.execute
loaded = "intentbus.state" in sys.modules
from intentbus import run_status, state
print(json.dumps({"loaded": loaded, "same": state.TERMINAL is run_status.TERMINAL}))
"""


def test_execute_leaves_the_run_state_model_to_a_state_read() -> None:
    """Execute never reads a run's state on its way (its guard reads the status and trust rules,
    ``intentbus.run_status``): its cold start creates no state model classes (~8 M instructions)."""
    from tests.unit.test_settings_plain_values import TEMPLATE

    seen = _probe(
        _RUN_STATE_PROBE,
        json.dumps({**TEMPLATE, "TRACING_BACKEND": "off"}),
        str(ROOT / "functions" / "execute" / "app.py"),
        AWS_DEFAULT_REGION="us-east-1",
        POWERTOOLS_TRACE_DISABLED="true",
    )

    assert seen == {"loaded": False, "same": True}


FACTS_READ_OR_PUBLISHED = {
    "validate": [],
    "decide": ["intentbus.facts.accepted"],
    "authorize": ["intentbus.facts.proposed"],
    "execute": [],
    "record": ["intentbus.facts.authorized", "intentbus.facts.executed"],
}
"""The fact models each stage's core imports with itself: those it reads (record: every outcome of a
command). What a stage publishes is imported with its first publication."""


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_imports_only_the_fact_models_it_reads(stage: str) -> None:
    probe = f"import json, sys, intentbus.stages.{stage}; print(json.dumps(sorted(sys.modules)))"
    loaded = [name for name in _probe(probe) if name.startswith("intentbus.facts.")]

    assert loaded == FACTS_READ_OR_PUBLISHED[stage]


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_core_leaves_the_approval_model_to_a_command_that_needs_a_person(stage: str) -> None:
    """No stage's core imports ``intentbus.approval_record`` with itself: authorize loads it to ask for an
    approval, the store to read one back (the approvals service)."""
    probe = f"import json, sys, intentbus.stages.{stage}; print(json.dumps(sorted(sys.modules)))"

    assert "intentbus.approval_record" not in _probe(probe)


_APPROVAL_REEXPORT_PROBE = """
import json, sys
import intentbus.journal
before = "intentbus.approval_record" in sys.modules
from intentbus.journal import Approval
from intentbus import approval_record
print(json.dumps({"loaded_before": before, "same": Approval is approval_record.Approval}))
"""


def test_the_journal_still_names_the_approval_model() -> None:
    """``intentbus.journal.Approval`` still works for code that imports it from there: the model loads
    only when asked for."""
    assert _probe(_APPROVAL_REEXPORT_PROBE) == {"loaded_before": False, "same": True}


@pytest.mark.parametrize("stage", STAGES)
def test_only_execute_loads_the_execution_guard_claim_types(stage: str) -> None:
    """``intentbus.execution_claim`` (the guard's claim, its request and status) is execute's alone; no
    stage's core loads the approval backlog's figures."""
    probe = f"import json, sys, intentbus.stages.{stage}; print(json.dumps(sorted(sys.modules)))"
    loaded = _probe(probe)

    assert ("intentbus.execution_claim" in loaded) is (stage == "execute")
    assert "intentbus.approval_backlog" not in loaded


_MOVED_NAMES_PROBE = """
import importlib, json, sys
old, new, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
importlib.import_module(old)
before = new in sys.modules
found = {name: getattr(sys.modules[old], name) for name in names}
moved = importlib.import_module(new)
print(json.dumps({"loaded_before": before, "same": all(found[n] is getattr(moved, n) for n in names)}))
"""


@pytest.mark.parametrize(
    ("old", "new", "names"),
    [
        ("intentbus.ports", "intentbus.execution_claim", "Claim,ClaimRequest,ClaimStatus"),
        (
            "intentbus.telemetry",
            "intentbus.approval_backlog",
            "ApprovalBacklog,approval_backlog,report_approval_backlog",
        ),
        ("intentbus.claims", "intentbus.claim_reference", "ClaimReference"),
        ("intentbus.config", "intentbus.bedrock_settings", "BedrockSettings"),
    ],
)
def test_moved_names_still_resolve_where_they_were(old: str, new: str, names: str) -> None:
    """Code that imports the claim types from ``intentbus.ports``, the backlog's figures from
    ``intentbus.telemetry``, a claim check's reference from ``intentbus.claims`` or the Bedrock settings
    from ``intentbus.config`` still gets them: their module loads only when one is asked for."""
    assert _probe(_MOVED_NAMES_PROBE, old, new, names) == {"loaded_before": False, "same": True}


_DATACLASSES_PROBE = """
import dataclasses, importlib, json, runpy, sys
made = {}
process_class = dataclasses._process_class
def counting(cls, init, repr, eq, *rest):
    if cls.__module__.startswith("intentbus"):
        made[f"{cls.__module__}.{cls.__qualname__}"] = (cls, init)
    return process_class(cls, init, repr, eq, *rest)
dataclasses._process_class = counting
for path in sys.argv[1:]:
    runpy.run_path(path)
entries = sorted(made)
for stage in ("validate", "decide", "authorize", "execute", "record"):
    importlib.import_module(f"intentbus.stages.{stage}")
importlib.import_module("intentbus.adapters.dynamodb_guard")
importlib.import_module("intentbus.adapters.idempotency")
unequal = sorted(name for name, (cls, _) in made.items() if cls.__eq__ is object.__eq__)
unprinted = sorted(name for name, (cls, _) in made.items() if cls.__repr__ is object.__repr__)
generated_init = sorted(name for name, (_, init) in made.items() if init)
seen = {"entries": entries, "unequal": unequal, "unprinted": unprinted, "generated_init": generated_init}
print(json.dumps(seen))
"""

DATACLASSES_AT_IMPORT = 22
"""The intentbus dataclasses the five entries' imports create (each some 4 M instructions of a cold start,
most of it compiling the methods ``dataclasses`` generates): the journal's, the ports' snapshot request,
the definition's, the stage deps and results, tracing's headers. Not the claim types nor the backlog's."""

NEVER_PRINTED = [
    "intentbus.stages.authorize.AuthorizeStage",
    "intentbus.stages.authorize._Turn",
    "intentbus.stages.common.StageDeps",
    "intentbus.stages.decide.DecideStage",
    "intentbus.stages.decide._Checked",
    "intentbus.stages.decide._Turn",
    "intentbus.stages.record.RecordStage",
    "intentbus.stages.validate.BusSender",
    "intentbus.stages.validate.ValidateStage",
]
"""The stage cores, their deps and their private per-record types: no log line, error or output shows
them, so they are made with ``repr=False`` (~0.4 M instructions each of a cold start), and with ``eq=False``
as well: ``NEVER_COMPARED`` holds them."""

NEVER_COMPARED = sorted(
    [
        "intentbus.budgets.BudgetBreach",
        "intentbus.definition.CommandSpec",
        "intentbus.definition.DecisionContext",
        "intentbus.definition.ModelAgent",
        "intentbus.definition.RetryPolicy",
        "intentbus.definition.ScriptedAgent",
        "intentbus.definition.Step",
        "intentbus.definition.Tool",
        "intentbus.definition.ToolContext",
        "intentbus.definition.Workflow",
        "intentbus.journal.Commit",
        "intentbus.journal.CommitResult",
        "intentbus.producers.ProducerBindings",
        "intentbus.retries.Delivery",
        "intentbus.stages.common.Fact",
        "intentbus.stages.common.StageResult",
        *NEVER_PRINTED,
    ]
)
"""Dataclasses of the stages' cold path that nothing compares or hashes by value: the stage cores, their
deps and per-record working types, the workflow definition's parts (a workflow, its steps, commands,
tools and agents: each made once, found by name) and the producer bindings. Made with ``eq=False``, so
their ``__eq__`` (and, frozen, ``__hash__``) are not generated: a third of a frozen dataclass's creation,
~0.4 M instructions of a mutable one's. Each is still hashable, by identity."""


GENERATED_INIT: list[str] = []
"""The stages' dataclasses whose methods ``@dataclass`` still generates as their class is made: none.
Every one on the stage path (the definition's, the journal's, the ports' snapshot request, the registry's
type spec, tracing's headers, the stage cores, deps, results and per-record types, the budget breach) has
its ``__init__`` written by hand (``intentbus.frozen``), and execute's own classes are plain classes:
generating an ``__init__``, and a frozen class's ``__setattr__``/``__delattr__``, cost 2-4 M instructions
a class of every cold start."""


def test_the_entries_create_only_the_dataclasses_they_use() -> None:
    seen = _probe(
        _DATACLASSES_PROBE,
        *(str(ROOT / "functions" / stage / "app.py") for stage in STAGES),
        AWS_DEFAULT_REGION="us-east-1",
        TRACING_BACKEND="off",
        POWERTOOLS_TRACE_DISABLED="true",
    )

    assert len(seen["entries"]) == DATACLASSES_AT_IMPORT, seen["entries"]
    assert not any(name.endswith(("Claim", "ClaimRequest", "ApprovalBacklog")) for name in seen["entries"])
    assert seen["unequal"] == NEVER_COMPARED
    assert seen["unprinted"] == NEVER_PRINTED
    assert seen["generated_init"] == GENERATED_INIT


_EXECUTE_CLASSES_PROBE = """
import dataclasses, importlib, json, sys
made = []
process_class = dataclasses._process_class
def counting(cls, *rest):
    made.append(f"{cls.__module__}.{cls.__qualname__}")
    return process_class(cls, *rest)
dataclasses._process_class = counting
import intentbus.handler, intentbus.runtime, intentbus.stages.validate
before = len(made)
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(made[before:]))
"""

EXECUTE_OWN_MODULES = (
    "intentbus.execution_claim",
    "intentbus.adapters.dynamodb_guard",
    "intentbus.adapters.idempotency",
    "intentbus.stages.execute",
)


def test_execute_creates_no_dataclass_beyond_what_the_entry_and_validate_do() -> None:
    """Execute's core, its guard and its idempotency runner define their classes by hand
    (``intentbus.frozen`` for the immutable ones), so their import compiles no generated methods: 13 M
    instructions of execute's cold start when they were seven dataclasses."""
    assert _probe(_EXECUTE_CLASSES_PROBE, *EXECUTE_OWN_MODULES) == []
