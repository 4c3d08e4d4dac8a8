"""The fault harness: one in-process local cloud, reused across schedules, with both fault seams in.

Every botocore call made inside a function goes through two interceptors (calls.py):
the fault injector (intentbus_local.faults.CallFaults), then, innermost, a tracker that records each
call that reached the service. The poller delivers through intentbus_local.faults.DeliveryFaults.
``run(schedule)`` emits the schedule's inputs, runs the cloud until idle, observes what is left and
checks the invariants. A schedule with the ``forge`` kind also has an attacker (forge.Forger, an
invocation observer) put forged messages among its traffic; every stage handler's outcome for every
message is recorded (``Landing``), so the checker knows where each forged one ended.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from botocore.exceptions import ClientError

from intentbus.adapters.dynamodb_store import DynamoWorkflowStore, entry_json, is_entry_item
from intentbus.catalog import Catalog
from intentbus.definition import Agent, Decision, DecisionContext
from intentbus.handler import SqsStageHandler
from intentbus.ids import canonical_json
from intentbus.stages.common import StageResult
from intentbus.stages.decide import DecideStage
from intentbus.state import TERMINAL
from intentbus.workflows import incident
from intentbus_faults import fanout_workflow, tables
from intentbus_faults.approver import Approver
from intentbus_faults.calls import Call, CallLog, Proceed, recording
from intentbus_faults.forge import Forger
from intentbus_faults.invariants import (
    Asked,
    Effect,
    Forged,
    Landing,
    Observation,
    RunView,
    check_all,
    declared_effects,
    forged_end,
    idempotency_record_id,
    safe_repeats,
)
from intentbus_faults.redis_store import (
    Lapses,
    RedisStore,
    counting_dynamodb_lapses,
    redis_store,
    tracking_redis_puts,
)
from intentbus_faults.schedule import FANOUT, SEED_DRIVE, WORKFLOWS, Drive, Input, RunRef, Schedule
from intentbus_faults.speedups import moto_fast_paths
from intentbus_local import report, seed
from intentbus_local.cloud import LocalCloud, RunSummary
from intentbus_local.faults import CallFaults, DeliveryFaults, Injected
from intentbus_local.service_models import shared_service_models
from intentbus_local.template import default_template_path, read_sam
from intentbus_local.topology import FunctionInfo

EXECUTE = "ExecuteFunction"
DECIDE = "DecideFunction"
EXPIRE_APPROVALS = "ExpireApprovalsFunction"
SWEEP_DEAD_LETTERS = "SweepDeadLettersFunction"
SWEEP_INDEX_KEY = "gsi2pk"
"""The expiry sweep's index key (``DynamoWorkflowStore.due_approvals``): a sparse index, so an item
without it is nothing the sweep lists."""
QUARANTINE = "QuarantineQueue"
CRM = "CrmTable"
_READS = ("Describe", "Get", "List", "Query", "Scan", "BatchGet")
_METRICS_REFRESH_SECONDS = 300.0
_COMPLETED = "COMPLETED"
_TAKEN = ("INPROGRESS", _COMPLETED)
"""A record's status as put: in progress, or (read-only commands) completed; Powertools' save updates."""
PRODUCER_BINDINGS = "monitoring.example=*;orders.example=*;crm.example=*"
"""The schedules' producers (incident, fan-out, direct tool), each bound to any tenant: every schedule
has tenants of its own. Nothing else is bound, so a forged input of another source is refused."""


@dataclass(frozen=True)
class MadeCall:
    """A call that reached the service (moto) and returned, or failed there."""

    seq: int
    function: str
    """The function's logical id."""
    service: str
    operation: str
    params: dict[str, Any]
    ok: bool
    record: str | None
    """In the execute function: the idempotency record in progress at the time."""


@dataclass(frozen=True)
class ModelCall:
    seq: int
    key: tuple[str, str, str]
    """(tenant, run, event type) of the decision asked for."""
    sandbox: int
    """Which of the decide function's sandboxes asked (1 = its first cold start, 2 = the next, ...)."""


class _CountedAgent:
    """Stands in front of a step's agent: every decide (and repair) is a model call, in call order."""

    def __init__(self, agent: Agent, tracker: CallTracker, stage: object) -> None:
        self._agent = agent
        self._tracker = tracker
        self._stage = stage

    @property
    def name(self) -> str:
        return self._agent.name

    def decide(self, context: DecisionContext) -> Decision:
        self._tracker.model_call((context.tenant_id, context.run_id, context.event_type), self._stage)
        return self._agent.decide(context)


class CallTracker:
    """The innermost interceptor: sees exactly the calls that were really made, in order."""

    def __init__(self, functions: Mapping[str, FunctionInfo], idempotency_table: str) -> None:
        self._logical = {function.name: function.logical_id for function in functions.values()}
        self._idempotency_table = idempotency_table
        self._seq = 0
        self._current: str | None = None
        self.made: list[MadeCall] = []
        self.model_calls: list[ModelCall] = []
        self._sandboxes: dict[int, tuple[object, int]] = {}

    def model_call(self, key: tuple[str, str, str], stage: object) -> None:
        """A model asked by the decide stage ``stage``: one object per sandbox, since a cold start
        builds the stage anew (its references are held, so an ``id`` is never reused)."""
        self._seq += 1
        _, sandbox = self._sandboxes.setdefault(id(stage), (stage, len(self._sandboxes) + 1))
        self.model_calls.append(ModelCall(self._seq, key, sandbox))

    def _own_calls_before(self, record: str) -> None:
        """A read-only command's record is put after its tool ran: execute's calls since the last record
        ended are its."""
        for index in range(len(self.made) - 1, -1, -1):
            made = self.made[index]
            if made.function != EXECUTE:
                continue
            if made.record is not None:
                return
            self.made[index] = replace(made, record=record)

    def _ends_record(self, call: Call) -> bool:
        """The record's command is done: its result saved (or put at once), or its record released."""
        if call.service != "dynamodb" or call.params.get("TableName") != self._idempotency_table:
            return False
        if call.operation == "DeleteItem":
            return True
        values = call.params.get("ExpressionAttributeValues", {})
        saved = call.operation == "UpdateItem" and values.get(":status", {}).get("S") == _COMPLETED
        status = call.params.get("Item", {}).get("status", {}).get("S")
        return saved or (call.operation == "PutItem" and status == _COMPLETED)

    def forget_model_calls(self) -> None:
        self.model_calls.clear()
        self._sandboxes.clear()

    def __call__(self, call: Call, proceed: Proceed) -> Any:
        function = self._logical.get(call.function, call.function)
        if function == EXECUTE:
            taken = in_progress_put(call.service, call.operation, call.params, self._idempotency_table)
            if taken is not None:
                self._current = taken
                if call.operation == "PutItem" and call.params["Item"]["status"]["S"] == _COMPLETED:
                    self._own_calls_before(taken)
        self._seq += 1
        made = (self._seq, function, call.service, call.operation, call.params)
        record = self._current if function == EXECUTE else None
        if function == EXECUTE and self._ends_record(call):
            self._current = None
        try:
            response = proceed(call.params)
        except ClientError:
            self.made.append(MadeCall(*made, ok=False, record=record))
            raise
        self.made.append(MadeCall(*made, ok=True, record=record))
        return response


@dataclass
class ScheduleResult:
    schedule: Schedule
    injected: list[Injected]
    violations: list[str]
    summary: RunSummary
    notes: list[str] = field(default_factory=list)
    """Allowed but worth knowing, e.g. a SAFE tool that repeated its effect."""
    statuses: dict[str, str] = field(default_factory=dict)
    wall_seconds: float = 0.0
    observation: Observation | None = None
    forged: list[tuple[Forged, str]] = field(default_factory=list)
    """Each forged message and where it ended (``invariants.forged_end``)."""
    lapses: int = 0
    """In-progress puts that replaced a lapsed lease (the attempt went to the reconcile path)."""


class FaultHarness:
    """A context manager; ``run`` one schedule after another (each with its own tenants and runs)."""

    def __init__(
        self,
        *,
        workflows: str = WORKFLOWS,
        template: Path | None = None,
        drive: Drive = SEED_DRIVE,
        logs_dir: Path | None = None,
        max_invocations: int = 1500,
        deadline_seconds: float = 120.0,
        idempotency: str = "dynamodb",
    ) -> None:
        """``idempotency``: execute's store, "dynamodb" or "redis" (a ``redis-server`` of its own)."""
        self._idempotency = idempotency
        self.lapses = Lapses()
        self.redis: RedisStore | None = None
        self._workflows = workflows
        self._template = template
        self.drive = drive
        self._logs_dir = logs_dir
        self._max_invocations = max_invocations
        self._deadline = deadline_seconds
        self._stack = contextlib.ExitStack()
        self._cloud: LocalCloud | None = None
        self._metrics_at = 0.0
        self.catalog = Catalog.from_modules(workflows)
        self.calls = CallLog()
        self.landings: dict[str, list[Landing]] = {}

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> FaultHarness:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        warnings.filterwarnings("ignore", module="moto")
        logging.getLogger("moto").setLevel(logging.ERROR)
        self._stack.enter_context(shared_service_models())
        logs = self._logs_dir or Path(tempfile.mkdtemp(prefix="intentbus-faults-logs-"))
        parameters = {"Workflows": self._workflows}
        template = self._template or default_template_path()
        if "ProducerBindings" in read_sam(template).get("Parameters", {}):
            parameters["ProducerBindings"] = ";".join(
                [PRODUCER_BINDINGS, *(f"{source}=*" for source in self.drive.sources)]
            )
        if self._idempotency == "redis":
            self.redis = self._stack.enter_context(redis_store())
            parameters |= self.redis.parameters()
        cloud = LocalCloud(
            mode="inprocess",
            template_path=self._template,
            parameters=parameters,
            logs_dir=logs,
            stack_name="intentbus-faults",
        )
        self._stack.enter_context(cloud)
        self._cloud = cloud
        topology = cloud.topology
        if CRM in topology.tables:
            crm_key = cloud.clients.dynamodb().describe_table(TableName=topology.tables[CRM])
            self._stack.enter_context(
                _journal_keyed_by_tenant(
                    any(k["AttributeName"] == "tenant_id" for k in crm_key["Table"]["KeySchema"])
                )
            )
        self._stack.enter_context(_every_tenant_may_touch_the_seed_service())
        self._stack.enter_context(_production_incidents_by_their_label())
        self._stack.enter_context(_recording_landings(self.landings))
        self.tracker = CallTracker(topology.functions, topology.tables["IdempotencyTable"])
        if self.redis is not None:
            self._stack.enter_context(
                tracking_redis_puts(self.tracker, topology.tables["IdempotencyTable"], self.lapses)
            )
        self._stack.enter_context(counting_dynamodb_lapses(self.lapses))
        self.call_faults = CallFaults(cloud.clock, topology.functions)
        self.delivery_faults = DeliveryFaults(cloud.clients.sqs())
        cloud.poller.faults = self.delivery_faults
        self._stack.enter_context(recording(self.calls, interceptors=(self._inject, self.tracker)))
        self._stack.enter_context(_jsonpath_parsed_once())
        self._stack.enter_context(moto_fast_paths())
        self._stack.enter_context(_counting_model_calls(self.tracker))
        seed.seed_service(cloud.clients)
        self._refresh_metrics()
        self.approver = Approver(
            cloud, DynamoWorkflowStore(topology.tables["WorkflowTable"], cloud.clients.dynamodb())
        )
        cloud.add_observer(self.approver.on_invocation)
        self.forger = Forger(
            cloud,
            DynamoWorkflowStore(topology.tables["WorkflowTable"], cloud.clients.dynamodb()),
            self.catalog,
        )
        cloud.add_observer(self.forger.on_invocation)

    def close(self) -> None:
        self._stack.close()
        self._cloud = None

    @property
    def cloud(self) -> LocalCloud:
        if self._cloud is None:
            raise RuntimeError("the harness is not running: use it as a context manager")
        return self._cloud

    def _inject(self, call: Call, proceed: Proceed) -> Any:
        return self.call_faults.intercept(call.function, call.service, call.operation, call.params, proceed)

    # ------------------------------------------------------------------ one schedule

    def run(self, schedule: Schedule) -> ScheduleResult:
        started = time.monotonic()
        cloud = self.cloud
        self.lapses.replaced.clear()
        self._reset_world()
        self.calls.calls.clear()
        self.tracker.made.clear()
        self.tracker.forget_model_calls()
        self.landings.clear()
        cloud.poller.history = []
        plan = schedule.plan()
        sent: list[tuple[int, Mapping[str, Any], str, str]] = []
        self.call_faults.plan = self.delivery_faults.plan = plan
        self.approver.reset({i.run: i.approval for i in schedule.inputs if i.approval and i.run})
        self.forger.reset(schedule)
        try:
            sent += self._emit([(i, 1 + (0 if i.late else i.copies - 1)) for i in schedule.inputs], len(sent))
            late = [(i, i.copies - 1) for i in schedule.inputs if i.late]
            if late:
                cloud.run_until_idle(max_invocations=schedule.head_start, raise_on_limit=False)
                sent += self._emit(late, len(sent))
            summary = cloud.run_until_idle(
                max_invocations=self._max_invocations, deadline_seconds=self._deadline, raise_on_limit=False
            )
            if self.approver.plans and summary.idle:
                self.approver.act_on_all()
                summary = _merged(
                    summary,
                    cloud.run_until_idle(
                        max_invocations=self._max_invocations,
                        deadline_seconds=self._deadline,
                        raise_on_limit=False,
                    ),
                )
        finally:
            self.call_faults.plan = self.delivery_faults.plan = None
            self.forger.active = False
        violations: list[str] = []
        if not summary.idle:
            violations.append(f"(settle) the pipeline did not settle: {summary.stop_reason}")
            cloud.run_until_idle(max_invocations=self._max_invocations, raise_on_limit=False)
        else:
            summary = _merged(summary, self._next_sweep())
        observation = self.observe(schedule, sent)
        violations += check_all(observation)
        self._clear_dead_letters()
        self._clear_tables()
        self._clear_archives()
        return ScheduleResult(
            schedule=schedule,
            injected=list(plan.injected),
            violations=violations,
            notes=safe_repeats(observation),
            summary=summary,
            statuses={
                str(run.ref): run.state.status.value if run.state else "none" for run in observation.runs
            },
            wall_seconds=time.monotonic() - started,
            observation=observation,
            forged=[(forged, forged_end(observation, forged)) for forged in observation.forged],
            lapses=len(self.lapses.replaced),
        )

    def _next_sweep(self) -> RunSummary:
        """The faults are over and the sweep fires once more, as it does every minute in AWS: what a
        crash left recorded but unannounced must be finished by then.

        When every rule due then is a sweep with nothing to look at (the expiry sweep's index holds no
        item, no dead-letter queue holds a message), its invocation would only log zero counts: the
        rules are moved on as if they had fired, and the invocation is not made (most schedules end so;
        it was one invocation and nine Queries a schedule)."""
        cloud = self.cloud
        due = cloud.schedules.next_at()
        if due is not None:
            cloud.clock.advance_to(due)
        now = cloud.clock.now()
        if self._nothing_to_sweep(cloud.schedules.due(now)):
            cloud.schedules.pass_due(now)
            return RunSummary(invocations=dict.fromkeys(cloud.topology.functions, 0), idle=True)
        return cloud.run_until_idle(
            max_invocations=self._max_invocations, deadline_seconds=self._deadline, raise_on_limit=False
        )

    def _nothing_to_sweep(self, due: list[str]) -> bool:
        """Whether each of the ``due`` functions is a sweep that would find nothing now."""
        topology = self.cloud.topology
        for function in due:
            if function == EXPIRE_APPROVALS:
                workflow_table = self._moto_table(topology.tables["WorkflowTable"])
                if tables.holds_attribute(workflow_table, SWEEP_INDEX_KEY):
                    return False
            elif function == SWEEP_DEAD_LETTERS:
                if any(sum(self.cloud.queue_depth(dlq.logical_id)) for dlq in topology.dlqs.values()):
                    return False
            else:
                return False
        return True

    def _emit(
        self, inputs: list[tuple[Input, int]], first_line: int
    ) -> list[tuple[int, Mapping[str, Any], str, str]]:
        sent: list[tuple[int, Mapping[str, Any], str, str]] = []
        for item, times in inputs:
            for _ in range(times):
                (bus_event_id,) = self.cloud.put_events([item.entry()])
                sent.append((first_line + len(sent) + 1, item.envelope, bus_event_id, item.source))
        return sent

    def _reset_world(self) -> None:
        self.cloud.clients("ecs").update_service(
            cluster=seed.CLUSTER, service=seed.SERVICE, desiredCount=seed.INITIAL_DESIRED_COUNT
        )
        if time.monotonic() - self._metrics_at > _METRICS_REFRESH_SECONDS:
            self._refresh_metrics()

    def _refresh_metrics(self) -> None:
        seed.seed_metrics(self.cloud.clients)
        self._metrics_at = time.monotonic()

    def _clear_dead_letters(self) -> None:
        sqs = self.cloud.clients.sqs()
        for queue in [*self.cloud.topology.dlqs.values(), self.cloud.topology.queues[QUARANTINE]]:
            while self.cloud.may_hold_visible(queue.logical_id):  # PurgeQueue: once a minute; receive, delete
                messages = sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=10).get("Messages", [])
                if not messages:
                    break
                sqs.delete_message_batch(
                    QueueUrl=queue.url,
                    Entries=[
                        {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)
                    ],
                )

    def _moto_table(self, name: str) -> Any:
        from moto.dynamodb.models import dynamodb_backends

        region = self.cloud.clients.dynamodb().meta.region_name
        return dynamodb_backends[self.cloud.topology.account_id][region].get_table(name)

    def _items(self, table: str) -> list[tables.Item]:
        """The table's items as a consistent Scan answers them (read in moto's store where it can)."""
        found = tables.stored(self._moto_table(table))
        return found if found is not None else tables.scanned(self.cloud.clients.dynamodb(), table)

    def _clear_tables(self) -> None:
        """Each schedule's items are its own: dropping them keeps moto fast (its TransactWriteItems
        deep-copies the whole table each time, so a growing table makes every schedule slower).

        Dropped in moto's own store (the harness's cloud runs in this process): a scan and batched
        deletes cost a twentieth of a schedule and left an empty partition behind for every key."""
        tables = self.cloud.topology.tables
        for table in (tables[name] for name in ("WorkflowTable", "IdempotencyTable", CRM) if name in tables):
            self._moto_table(table).items.clear()

    def _clear_archives(self) -> None:
        """The buses' archived copies of a schedule's facts go with its items: moto keeps every archived
        event in memory (a third of what a schedule left behind) and no schedule replays another's."""
        from moto.events.models import events_backends

        region = self.cloud.clients.events().meta.region_name
        for archive in events_backends[self.cloud.topology.account_id][region].archives.values():
            archive.events.clear()

    # ------------------------------------------------------------------ what is left

    def observe(self, schedule: Schedule, sent: list[tuple[int, Mapping[str, Any], str, str]]) -> Observation:
        cloud = self.cloud
        topology = cloud.topology
        ddb = cloud.clients.dynamodb()
        store = DynamoWorkflowStore(topology.tables["WorkflowTable"], ddb)
        scanned = self._items(topology.tables["WorkflowTable"])
        workflow_items = tables.WorkflowItems(scanned)
        dead = self._dead_letters({forged.bus_event_id for forged in self.forger.forged})
        in_flight = {q.logical_id: sum(cloud.queue_depth(q.logical_id)) for q in topology.stage_queues}
        runs: list[RunView] = []
        for ref in schedule.runs:
            runs.append(
                RunView(
                    ref=ref,
                    state=workflow_items.state(ref.tenant_id, ref.run_id),
                    entries=workflow_items.entries(ref.tenant_id, ref.run_id),
                    pending_approvals=_pending_approvals(workflow_items, ref),
                    dead_letters=dead.get((ref.tenant_id, ref.run_id), []),
                    in_flight=sum(in_flight.values()),
                )
            )
        obs = Observation(
            seed=schedule.seed,
            runs=runs,
            report=report.build(cloud, self.catalog, sent, snapshot=report.TableSnapshot(scanned)),
            sent=len(sent),
            repeat_safety={
                name: spec.tool.repeat_safety
                for workflow in self.catalog.workflows.values()
                for name, spec in workflow.commands.items()
            },
            declared=declared_effects(self.catalog),
            deliveries=list(cloud.poller.history or ()),
            retry_policies=[
                spec.retry
                for workflow in self.catalog.workflows.values()
                for spec in workflow.commands.values()
            ],
        )
        self._observe_approvals(obs, store)
        for asked in self.tracker.model_calls:
            obs.model_calls.setdefault(asked.key, []).append(Asked(asked.seq, asked.sandbox))
        self._observe_calls(obs)
        records = (
            tables.by_id(self._items(topology.tables["IdempotencyTable"]))
            if self.redis is None and obs.taken_at
            else {}
        )
        for record in obs.taken_at:
            if self.redis is not None:
                obs.idempotency[record] = self.redis.record(record)
                continue
            item = records.get(record, {})
            obs.idempotency[record] = {name: next(iter(value.values())) for name, value in item.items()}
        for call in self.calls.calls:
            if (call.service, call.operation) == ("events", "PutEvents"):
                for entry in call.params.get("Entries", []):
                    detail = json.loads(entry["Detail"])
                    obs.published.setdefault(str(detail.get("id")), []).append(canonical_json(detail))
        self._read_journal(obs)
        self._observe_forged(obs, workflow_items)
        return obs

    def _observe_forged(self, obs: Observation, store: tables.WorkflowItems) -> None:
        """What the attacker put, and where every message (forged or not) ended: its landings at the
        stages, its quarantine records, the DLQs that hold it."""
        obs.forged = list(self.forger.forged)
        obs.landings = {event_id: list(landings) for event_id, landings in self.landings.items()}
        for message in self.cloud.queue_messages(QUARANTINE):
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                record = message.json()
                event_id = str(json.loads(record["body"])["id"])
                obs.quarantined.setdefault(event_id, []).append((str(record["stage"]), str(record["reason"])))
        for dlq in self.cloud.topology.dlqs.values():
            for message in self.cloud.queue_messages(dlq.logical_id):
                with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                    obs.dead_lettered.setdefault(str(message.json()["id"]), []).append(dlq.logical_id)
        invented = {(f.tenant_id, f.run_id) for f in obs.forged if f.new_run}
        for tenant_id, run_id in sorted(invented):
            ref = RunRef(tenant_id, run_id, "forged")
            obs.forged_runs.append(
                RunView(
                    ref=ref, state=store.state(tenant_id, run_id), entries=store.entries(tenant_id, run_id)
                )
            )

    def _observe_calls(self, obs: Observation) -> None:
        """What the calls made show: effects, records taken, runs ended, decisions recorded."""
        idempotency_table = self.cloud.topology.tables["IdempotencyTable"]
        for made in self.tracker.made:
            if made.function == EXECUTE and made.ok and self._is_effect(made):
                obs.effects.append(
                    Effect(made.seq, made.record, f"{made.service}.{made.operation}", made.params)
                )
            if made.function == EXECUTE and made.ok:
                taken = in_progress_put(made.service, made.operation, made.params, idempotency_table)
                if taken is not None:
                    obs.taken_at.setdefault(taken, made.seq)
            if made.ok and made.operation == "TransactWriteItems":
                for run in _ended(made.params):
                    obs.ended_at.setdefault(run, made.seq)
                if made.function == DECIDE:
                    for key in _decisions_recorded(made.params):
                        obs.decided_at.setdefault(key, made.seq)

    def _observe_approvals(self, obs: Observation, store: DynamoWorkflowStore) -> None:
        for ref, decided in self.approver.decided.items():
            obs.decisions[ref] = decided
            approval = store.approval(ref.tenant_id, decided.approval_id)
            if approval is not None:
                obs.approvals[decided.approval_id] = approval

    def _is_effect(self, made: MadeCall) -> bool:
        if made.operation.startswith(_READS) or made.service in ("events", "sqs"):
            return False
        pipeline_tables = {self.cloud.topology.tables[name] for name in ("WorkflowTable", "IdempotencyTable")}
        if made.service != "dynamodb":
            return True
        tables = {made.params.get("TableName")} | {
            str(next(iter(action.values())).get("TableName"))
            for action in made.params.get("TransactItems", [])
        }
        return not tables <= pipeline_tables | {None}

    def _read_journal(self, obs: Observation) -> None:
        table = self.cloud.topology.tables["CrmTable"]
        stored: dict[tuple[tuple[str, Any], ...], tables.Item] | None = None
        for run in obs.runs:
            if run.ref.workflow != FANOUT:
                continue
            for command in run.proposed():
                payload = command.get("payload", {})
                journal_key = fanout_workflow.journal_key(
                    run.ref.tenant_id, run.ref.run_id, str(payload.get("sku"))
                )
                item_key = fanout_workflow.journal_item_key(
                    run.ref.tenant_id, run.ref.run_id, str(payload.get("sku"))
                )
                if stored is None:
                    stored = {_key_of(item, item_key): item for item in self._items(table)}
                item = stored.get(_key_of(item_key, item_key))
                obs.journal[journal_key] = int(item["applied"]["N"]) if item and "applied" in item else 0
                key = command.get("idempotency_key")
                if isinstance(key, str):
                    obs.journal_keys[idempotency_record_id(run.ref.tenant_id, key)] = journal_key

    def _dead_letters(self, forged: set[str]) -> dict[tuple[str, str], list[str]]:
        """(tenant, run) -> the DLQ messages that name it; a forged message does not excuse a stuck run."""
        found: dict[tuple[str, str], list[str]] = {}
        for dlq in self.cloud.topology.dlqs.values():
            for message in self.cloud.queue_messages(dlq.logical_id):
                with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                    if message.json()["id"] in forged:
                        continue
                    detail = message.json()["detail"]
                    run = (str(detail["tenant_id"]), str(detail["run_id"]))
                    found.setdefault(run, []).append(f"{detail.get('type', '?')} in {dlq.logical_id}")
        return found


def _key_of(item: Mapping[str, Any], key: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """``item``'s values of ``key``'s attributes, comparable (what a GetItem of ``key`` matches)."""
    return tuple((name, repr(item.get(name))) for name in sorted(key))


def _pending_approvals(workflow_items: tables.WorkflowItems, ref: RunRef) -> list[str]:
    found: list[str] = []
    for item in workflow_items.by_gsi1(f"T#{ref.tenant_id}#APPROVALS#PENDING"):
        with contextlib.suppress(KeyError, ValueError):
            approval = json.loads(item["approval"]["S"])
            if approval["run_id"] == ref.run_id:
                found.append(str(approval["approval_id"]))
    return found


def _decisions_recorded(params: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(tenant, run, event type) of each agent decision a committed decide transaction recorded."""
    for action in params.get("TransactItems", []):
        item = action.get("Put", {}).get("Item", {})
        if item.get("stage", {}).get("S") != "decide" or not is_entry_item(item):
            continue
        entry = json.loads(entry_json(item))
        if "decision" in entry.get("summary", {}):
            _, tenant, _, run = str(item["pk"]["S"]).split("#", 3)
            yield tenant, run, str(entry["input_type"])


def _merged(first: RunSummary, second: RunSummary) -> RunSummary:
    """Two consecutive runs until idle as one: the counts added, the second's ending."""
    return replace(
        second,
        invocations={
            k: first.invocations.get(k, 0) + second.invocations.get(k, 0) for k in second.invocations
        },
        messages_processed=first.messages_processed + second.messages_processed,
        messages_failed=first.messages_failed + second.messages_failed,
        virtual_seconds_advanced=first.virtual_seconds_advanced + second.virtual_seconds_advanced,
        wall_seconds=first.wall_seconds + second.wall_seconds,
    )


def in_progress_put(service: str, operation: str, params: dict[str, Any], table: str) -> str | None:
    """The idempotency record a call puts in progress, on its own or in the guard's transaction; or puts
    completed at once (a read-only command's, which takes no lock)."""
    if service != "dynamodb":
        return None
    puts = [params] if operation == "PutItem" else []
    if operation == "TransactWriteItems":
        puts = [action["Put"] for action in params.get("TransactItems", []) if "Put" in action]
    for put in puts:
        item = put.get("Item", {})
        if put.get("TableName") == table and item.get("status", {}).get("S") in _TAKEN:
            return str(item["id"]["S"])
    return None


def _ended(params: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """The runs a committed TransactWriteItems made terminal (its state Put has a terminal status)."""
    for action in params.get("TransactItems", []):
        item = action.get("Put", {}).get("Item", {})
        if item.get("sk", {}).get("S") == "STATE" and item.get("status", {}).get("S") in TERMINAL:
            _, tenant, _, run = str(item["pk"]["S"]).split("#", 3)
            yield tenant, run


@contextlib.contextmanager
def _recording_landings(landings: dict[str, list[Landing]]) -> Iterator[None]:
    """Every stage handler's outcome for every message it handled, by the message's bus event id (the
    handlers run in this process): where each forged message ended, as the stage itself said."""
    original = SqsStageHandler._process

    def recorded(handler: SqsStageHandler, raw: dict[str, Any], message_id: str | None) -> StageResult:
        result = original(handler, raw, message_id)
        with contextlib.suppress(ValueError, KeyError, TypeError):
            event_id = str(json.loads(raw["body"])["id"])
            landing = Landing(handler.stage, result.outcome.value, result.reason, result.forged)
            landings.setdefault(event_id, []).append(landing)
        return result

    setattr(SqsStageHandler, "_process", recorded)  # noqa: B010
    try:
        yield
    finally:
        setattr(SqsStageHandler, "_process", original)  # noqa: B010


@contextlib.contextmanager
def _journal_keyed_by_tenant(keyed: bool) -> Iterator[None]:
    """The fan-out journal's items follow the CRM table's key (keyed by tenant, or not yet)."""
    original = fanout_workflow.TENANT_KEYED
    fanout_workflow.TENANT_KEYED = keyed
    try:
        yield
    finally:
        fanout_workflow.TENANT_KEYED = original


@contextlib.contextmanager
def _every_tenant_may_touch_the_seed_service() -> Iterator[None]:
    """The incident workflow allow-lists the services each tenant may touch; the schedules' tenants are
    their own (``t<seed>-inc<k>``), so the harness lets every tenant touch the seed cluster's services,
    and none other (a forged command for another cluster stays refused)."""
    workflow = incident.workflow
    original = workflow.tenant_resources
    if original is not None:
        workflow.tenant_resources = {**original, "*": (*original.get("*", ()), f"ecs:{seed.CLUSTER}/*")}
    try:
        yield
    finally:
        workflow.tenant_resources = original


@contextlib.contextmanager
def _production_incidents_by_their_label() -> Iterator[None]:
    """The incident policy keys "production needs a person" on the deployment's Environment; the
    harness's one stack stands for both deployments, so here (only) an incident run is in production
    when its alert says so (schedule.incident_input's ``environment``): four in ten wait for a person."""
    workflow = incident.workflow
    original = workflow.policy
    rules = tuple(
        rule
        if rule.environments is None
        else rule.model_copy(
            update={"environments": None, "where": {**rule.where, "environment": rule.environments}}
        )
        for rule in original.rules
    )
    workflow.policy = original.model_copy(update={"rules": rules})
    try:
        yield
    finally:
        workflow.policy = original


@contextlib.contextmanager
def _counting_model_calls(tracker: CallTracker) -> Iterator[None]:
    original = DecideStage._agent

    def counted(stage: DecideStage, agent: Agent) -> Agent:
        return _CountedAgent(original(stage, agent), tracker, stage)

    setattr(DecideStage, "_agent", counted)  # noqa: B010
    try:
        yield
    finally:
        setattr(DecideStage, "_agent", original)  # noqa: B010


@contextlib.contextmanager
def _jsonpath_parsed_once() -> Iterator[None]:
    """moto's EventBridge parses the same nine JSONPath expressions (with a fresh yacc parser) for every
    event it delivers to SQS; parsing each once makes PutEvents several times faster."""
    import jsonpath_ng.ext

    original = vars(jsonpath_ng.ext)["parse"]
    setattr(jsonpath_ng.ext, "parse", functools.lru_cache(maxsize=64)(original))  # noqa: B010
    try:
        yield
    finally:
        setattr(jsonpath_ng.ext, "parse", original)  # noqa: B010
