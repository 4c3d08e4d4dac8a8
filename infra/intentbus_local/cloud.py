"""The whole topology of template.yaml on moto, with Lambda's SQS polling played in this process."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from intentbus_local import collector, sqs_deep_queues, sqs_receive
from intentbus_local.backend import Mode, MotoBackend, backend_for
from intentbus_local.built_runtime import BuiltCode, BuiltRuntime, open_build
from intentbus_local.clients import Clients
from intentbus_local.clock import LocalClock
from intentbus_local.lambda_runtime import FunctionRuntime, Invocation, LambdaRuntime
from intentbus_local.poller import Poller, make_visible
from intentbus_local.provision import provision
from intentbus_local.schedules import Schedules
from intentbus_local.seed import LOCAL_PRODUCER_BINDINGS
from intentbus_local.sqs_event import with_account
from intentbus_local.template import LocalTemplate, load_template
from intentbus_local.topology import QueueInfo, Topology

Observer = Callable[[Invocation], None]
_T = TypeVar("_T")

PUT_EVENTS_MAX_ENTRIES = 10
PRODUCER_BINDINGS_PARAMETER = "ProducerBindings"
_IDLE_POLL_INTERVAL = 0.02
_PEEK_VISIBILITY_TIMEOUT = 60


class PutEventsError(RuntimeError):
    def __init__(self, failed: Sequence[Mapping[str, Any]]) -> None:
        super().__init__(f"{len(failed)} event(s) rejected by PutEvents: {list(failed)}")
        self.failed = list(failed)


@dataclass
class RunSummary:
    invocations: dict[str, int] = field(default_factory=dict)
    """Function logical id -> invocations."""
    messages_processed: int = 0
    """Records deleted after their function succeeded with them."""
    messages_failed: int = 0
    """Failed deliveries (one message failing three times counts three)."""
    virtual_seconds_advanced: float = 0.0
    wall_seconds: float = 0.0
    idle: bool = False
    stop_reason: str | None = None

    @property
    def total_invocations(self) -> int:
        return sum(self.invocations.values())


class NotIdleError(RuntimeError):
    def __init__(self, summary: RunSummary) -> None:
        super().__init__(f"the local cloud did not become idle: {summary.stop_reason} ({summary})")
        self.summary = summary


@dataclass(frozen=True)
class QueueMessage:
    message_id: str
    body: str
    attributes: Mapping[str, str]
    message_attributes: Mapping[str, Any]

    def json(self) -> Any:
        return json.loads(self.body)


class LocalCloud:
    """A context manager. ``mode`` "inprocess" patches boto3 in this process (fast); "server" runs moto's
    HTTP server on 127.0.0.1 and points handlers at it through ``AWS_ENDPOINT_URL``.

    ``code_dirs`` (function logical id -> directory) runs other code for a function, e.g. test doubles.
    ``built`` (a ``sam build`` directory, e.g. ``.aws-sam/build``) runs what was built instead of the
    source tree: the build's template, each function in a process of its own with only its directory,
    its layers and the runtime's boto3 to import from (see built_runtime; needs ``mode="server"``).
    ``parameters`` are the stack's; ``ProducerBindings`` defaults to ``seed.LOCAL_PRODUCER_BINDINGS``
    (the sample producers, any tenant) where the template declares it.
    Not thread-safe: one caller drives it.
    """

    def __init__(
        self,
        *,
        mode: Mode = "inprocess",
        template_path: Path | None = None,
        code_dirs: Mapping[str, Path] | None = None,
        stack_name: str = "intentbus-local",
        parameters: Mapping[str, str] | None = None,
        logs_dir: Path | None = None,
        region: str = "us-east-1",
        observers: Sequence[Observer] = (),
        built: Path | None = None,
    ) -> None:
        if built is not None and mode != "server":
            raise ValueError("built functions run in processes of their own: they need mode='server'")
        if built is not None and (template_path is not None or code_dirs):
            raise ValueError("built runs the build's own template and code: no template_path or code_dirs")
        self.mode: Mode = mode
        self.built = built
        self._template_path = template_path
        self._code_dirs = dict(code_dirs or {})
        self._stack_name = stack_name
        self._parameters = dict(parameters or {})
        self._logs_dir = logs_dir
        self._region = region
        self._observers: list[Observer] = list(observers)
        self.clock = LocalClock()
        self._backend: MotoBackend | None = None
        self._clients: Clients | None = None
        self._template: LocalTemplate | None = None
        self._topology: Topology | None = None
        self._runtime: FunctionRuntime | None = None
        self._poller: Poller | None = None
        self._schedules: Schedules | None = None
        self._collector_tuned = False

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> LocalCloud:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        code: BuiltCode | None = open_build(self.built) if self.built is not None else None
        template_path = code.template if code is not None else self._template_path
        self._template = load_template(template_path, code_dirs=self._code_dirs, region=self._region)
        parameters = self._stack_parameters(self._template, self._parameters)
        if self._logs_dir is None:
            self._logs_dir = Path(tempfile.mkdtemp(prefix="intentbus-local-logs-"))
        self._backend = backend_for(self.mode)
        self._backend.start()
        if not self._collector_tuned:
            collector.started()
            self._collector_tuned = True
        try:
            self._clients = Clients(region=self._region, endpoint_url=self._backend.endpoint_url)
            self._topology = provision(
                self._clients, self._template, stack_name=self._stack_name, parameters=parameters
            )
            self._runtime = self._function_runtime(code)
            self._poller = Poller(
                self._clients.sqs(),
                self._runtime,
                self.clock,
                region=self._region,
                account_id=self._topology.account_id,
                receivable=self._receivable if self.mode == "inprocess" else None,
                delete_batch=self._delete_batch if self.mode == "inprocess" else None,
                receive=self._receive if self.mode == "inprocess" else None,
                make_visible=self._change_visibility if self.mode == "inprocess" else None,
            )
            self._schedules = Schedules.from_template(
                self._template,
                self.invoke,
                now=self.clock.now(),
                region=self._region,
                account_id=self._topology.account_id,
            )
        except BaseException:
            self.close()
            raise

    def _function_runtime(self, code: BuiltCode | None) -> FunctionRuntime:
        functions = self.topology.functions
        environment = self.clients.handler_environment()
        logs = _started(self._logs_dir)
        if code is None:
            return LambdaRuntime(functions, clock=self.clock, logs_dir=logs, base_environment=environment)
        return BuiltRuntime(functions, code, clock=self.clock, logs_dir=logs, base_environment=environment)

    def redeploy(
        self, *, parameters: Mapping[str, str] | None = None, template: Path | None = None
    ) -> Topology:
        """Applies a changed template and changed parameters to the running stack, as ``sam deploy``
        updates a deployed one (see redeploy.py); returns the new topology.

        ``template``: the template to deploy, by default the running one's file read again. ``parameters``
        are set over the stack's current ones. Functions get their new configuration and start cold;
        queues, rules and mappings follow the template; tables keep their items and queues their messages
        (a deleted queue's are gone). The virtual clock and each remaining schedule carry on."""
        from intentbus_local.redeploy import update

        merged = {**self._parameters, **(parameters or {})}
        loaded = load_template(template or self.template.path, code_dirs=self._code_dirs, region=self._region)
        before = self.topology
        topology = update(
            self.clients,
            loaded,
            stack_name=self._stack_name,
            parameters=self._stack_parameters(loaded, merged),
            direct=before.direct_resources,
        )
        self._template, self._topology, self._parameters = loaded, topology, merged
        kept = {queue.url for queue in topology.queues.values()}
        self.poller.forget({queue.url for queue in before.queues.values()} - kept)
        _started(self._runtime).redeployed(topology.functions)
        schedules = Schedules.from_template(
            loaded, self.invoke, now=self.clock.now(), region=self._region, account_id=topology.account_id
        )
        schedules.keep_times_of(self.schedules)
        self._schedules = schedules
        return topology

    @staticmethod
    def _stack_parameters(template: LocalTemplate, parameters: Mapping[str, str]) -> dict[str, str]:
        stack = dict(parameters)
        if PRODUCER_BINDINGS_PARAMETER in template.sam.get("Parameters", {}):
            stack.setdefault(PRODUCER_BINDINGS_PARAMETER, LOCAL_PRODUCER_BINDINGS)
        return stack

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None
        self._poller = None
        self._schedules = None
        if self._backend is not None:
            self._backend.stop()
            self._backend = None
        if self._collector_tuned:
            collector.stopped()
            self._collector_tuned = False

    # ------------------------------------------------------------------ what is running

    @property
    def topology(self) -> Topology:
        return _started(self._topology)

    @property
    def template(self) -> LocalTemplate:
        return _started(self._template)

    @property
    def clients(self) -> Clients:
        return _started(self._clients)

    @property
    def poller(self) -> Poller:
        """For tests that drive one mapping at a time (``poller.poll(mapping)``)."""
        return _started(self._poller)

    @property
    def schedules(self) -> Schedules:
        """The template's scheduled rules; ``run_until_idle`` fires those whose virtual time came."""
        return _started(self._schedules)

    @property
    def endpoint_url(self) -> str | None:
        return _started(self._backend).endpoint_url

    @property
    def logs_dir(self) -> Path:
        return _started(self._logs_dir)

    @property
    def runtime(self) -> FunctionRuntime:
        """What runs the functions: LambdaRuntime in this process, or BuiltRuntime for ``built``."""
        return _started(self._runtime)

    def log_path(self, function_logical_id: str) -> Path:
        return _started(self._runtime).log_path(function_logical_id)

    def add_observer(self, observer: Observer) -> Callable[[], None]:
        """Called after every invocation; returns a function that removes it."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    # ------------------------------------------------------------------ driving it

    def put_events(self, entries: Sequence[Mapping[str, Any]], *, bus_name: str | None = None) -> list[str]:
        """PutEvents as a producer would: on the ingress bus, or ``bus_name`` (e.g. the pipeline bus,
        ``topology.bus_name``, as an attacker past IAM); an entry's own ``EventBusName`` wins over both.
        Returns the event ids."""
        events = self.clients.events()
        default_bus = bus_name or self.topology.ingress_bus_name
        ids: list[str] = []
        for start in range(0, len(entries), PUT_EVENTS_MAX_ENTRIES):
            chunk = [
                {"EventBusName": default_bus, **entry}
                for entry in entries[start : start + PUT_EVENTS_MAX_ENTRIES]
            ]
            response = events.put_events(Entries=chunk)  # type: ignore[arg-type]
            results = response["Entries"]
            if response.get("FailedEntryCount"):
                raise PutEventsError(
                    [{**r, "Entry": e} for r, e in zip(results, chunk, strict=True) if "ErrorCode" in r]
                )
            ids.extend(r["EventId"] for r in results)
        return ids

    def invoke(self, function_logical_id: str, event: Mapping[str, Any]) -> Invocation:
        """Invokes a function directly (like ``aws lambda invoke``); observers see it too."""
        invocation = _started(self._runtime).invoke(function_logical_id, event)
        self._notify(invocation)
        return invocation

    def run_until_idle(
        self,
        *,
        max_invocations: int = 1000,
        deadline_seconds: float = 60.0,
        raise_on_limit: bool = True,
        hold: Collection[str] = (),
    ) -> RunSummary:
        """Polls every mapping until every stage queue is empty, advancing the virtual clock past pending
        visibility timeouts and firing the scheduled rules whose time came on it (so a test that advances
        the clock by four hours and runs until idle sees the rules fire). ``deadline_seconds`` is
        wall-clock time. The mappings of the functions in ``hold`` are left disabled (as with
        ``UpdateEventSourceMapping Enabled=false``): their queues fill up and do not count against idle."""
        poller = _started(self._poller)
        schedules = _started(self._schedules)
        summary = RunSummary(invocations=dict.fromkeys(self.topology.functions, 0))
        started = time.monotonic()
        deadline = started + deadline_seconds
        while True:
            summary.wall_seconds = time.monotonic() - started
            if summary.total_invocations >= max_invocations:
                summary.stop_reason = f"max_invocations ({max_invocations}) reached"
            elif time.monotonic() > deadline:
                summary.stop_reason = f"deadline ({deadline_seconds} s) passed"
            if summary.stop_reason:
                if not poller.pending_count and self._stage_queues_empty(hold):
                    summary.idle, summary.stop_reason = True, None  # the last invocation allowed finished it
                    return summary
                if raise_on_limit:
                    raise NotIdleError(summary)
                return summary
            for function in schedules.fire_due(self.clock.now()):
                summary.invocations[function] += 1
            if self._poll_all(poller, summary, max_invocations, hold):
                continue
            if poller.pending_count:
                next_visible = poller.next_visible_at()
                if next_visible is not None:
                    summary.virtual_seconds_advanced += self.clock.advance_to(next_visible)
                poller.release_due()
                continue
            if self._stage_queues_empty(hold):
                summary.idle = True
                summary.wall_seconds = time.monotonic() - started
                return summary
            # In flight or delayed, but not by a failure the poller saw (e.g. a handler extended it).
            time.sleep(_IDLE_POLL_INTERVAL)

    def _poll_all(
        self, poller: Poller, summary: RunSummary, max_invocations: int, hold: Collection[str] = ()
    ) -> bool:
        progressed = False
        for mapping in self.topology.mappings:
            if mapping.function_logical_id in hold:
                continue
            if summary.total_invocations >= max_invocations:
                break
            for result in poller.deliveries(mapping):
                progressed = True
                summary.invocations[mapping.function_logical_id] += 1
                summary.messages_processed += len(result.succeeded)
                summary.messages_failed += len(result.failed)
                self._notify(result.invocation)
        return progressed

    def _receivable(self, queue_name: str) -> bool:
        """Whether moto's queue has a message a receive would hand out now (its visible ones)."""
        return sqs_deep_queues.has_visible(_moto_queue(self.topology.account_id, self._region, queue_name))

    def _delete_batch(self, queue_url: str, entries: list[dict[str, str]]) -> list[dict[str, Any]]:
        """DeleteMessageBatch answered by moto's SQS backend itself, as its handler answers it once the
        entries are known non-empty and distinct: the ``Failed`` entries (a handle no longer valid)."""
        backend = _moto_queue_backend(self.topology.account_id, self._region)
        _, failed = backend.delete_message_batch(queue_url.rsplit("/", 1)[-1], entries)
        return list(failed)

    def _receive(
        self, queue_url: str, count: int, visibility_timeout: int | None = None
    ) -> list[dict[str, Any]] | None:
        """ReceiveMessage answered by moto's SQS backend itself while calls are answered in process
        (intentbus_local.sqs_receive); None: make the request."""
        if not _answering_in_process():
            return None
        model = _started(self._clients).sqs().meta.service_model.operation_model("ReceiveMessage")
        backend = _moto_queue_backend(self.topology.account_id, self._region)
        return sqs_receive.receive(backend, queue_url.rsplit("/", 1)[-1], count, model, visibility_timeout)

    def _change_visibility(self, queue_url: str, entries: list[dict[str, Any]]) -> bool:
        """ChangeMessageVisibilityBatch done by moto's SQS backend itself, as its handler does it once the
        queue is found, for a caller that does not read the answer; False: make the request."""
        backend = _moto_queue_backend(self.topology.account_id, self._region)
        name = queue_url.rsplit("/", 1)[-1]
        if not _answering_in_process() or name not in backend.queues:
            return False
        backend.change_message_visibility_batch(name, entries)
        return True

    def _stage_queues_empty(self, hold: Collection[str] = ()) -> bool:
        held = {m.queue.logical_id for m in self.topology.mappings if m.function_logical_id in hold}
        return all(
            self.queue_depth(q.logical_id) == (0, 0, 0)
            for q in self._stage_queues()
            if q.logical_id not in held
        )

    def _stage_queues(self) -> list[QueueInfo]:
        return list({q.logical_id: q for q in self.topology.stage_queues}.values())

    def _notify(self, invocation: Invocation) -> None:
        for observer in list(self._observers):
            observer(invocation)

    # ------------------------------------------------------------------ looking at queues

    def queue_depth(self, logical_id: str) -> tuple[int, int, int]:
        """(visible, in flight, delayed) messages. In process, read from moto's queue itself: the counts
        GetQueueAttributes would answer, without a request (runs look often: progress, idle checks)."""
        queue = self.topology.queues[logical_id]
        if self.mode == "inprocess":
            attributes = _moto_queue(self.topology.account_id, self._region, queue.name).attributes
        else:
            attributes = self.clients.sqs().get_queue_attributes(
                QueueUrl=queue.url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed",
                ],
            )["Attributes"]
        return (
            int(attributes.get("ApproximateNumberOfMessages", "0")),
            int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
            int(attributes.get("ApproximateNumberOfMessagesDelayed", "0")),
        )

    def stage_depths(self) -> dict[str, int]:
        """Messages in each function's queue (visible, in flight or delayed), by the function's logical id
        without ``Function`` (``ValidateFunction`` -> ``validate``), in template order."""
        depths: dict[str, int] = {}
        for mapping in self.topology.mappings:
            stage = mapping.function_logical_id.removesuffix("Function").lower()
            depths[stage] = depths.get(stage, 0) + sum(self.queue_depth(mapping.queue.logical_id))
        return depths

    def may_hold_visible(self, logical_id: str) -> bool:
        """False only when the queue surely has no visible message: in process, moto's queue says so
        without a request; against a server, only a receive would tell."""
        return self.mode != "inprocess" or self._receivable(self.topology.queues[logical_id].name)

    def queue_messages(self, logical_id: str) -> list[QueueMessage]:
        """The visible messages of a queue (e.g. the quarantine queue or a DLQ), left in the queue.

        SQS has no peek: each message is received and made visible again, which adds one to its
        ApproximateReceiveCount - harmless on a DLQ or the quarantine queue, but on a stage queue it
        counts towards maxReceiveCount. Bodies get ``account`` as on AWS (see sqs_event.with_account).
        In process, a queue with no visible message is answered without a receive (most looks are at
        empty dead-letter queues).
        """
        if not self.may_hold_visible(logical_id):
            return []
        sqs = self.clients.sqs()
        url = self.topology.queues[logical_id].url
        seen: dict[str, QueueMessage] = {}
        handles: list[str] = []
        while True:
            received = self._receive(url, 10, _PEEK_VISIBILITY_TIMEOUT) if self.mode == "inprocess" else None
            if received is None:
                received = sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=0,
                    VisibilityTimeout=_PEEK_VISIBILITY_TIMEOUT,
                    MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"],
                ).get("Messages", [])  # type: ignore[assignment]
            if not received:
                break
            for message in received:
                handles.append(message["ReceiptHandle"])
                seen[message["MessageId"]] = QueueMessage(
                    message_id=message["MessageId"],
                    body=with_account(message["Body"], self.topology.account_id),
                    attributes={str(k): v for k, v in message.get("Attributes", {}).items()},
                    message_attributes=dict(message.get("MessageAttributes", {})),
                )
        make_visible(sqs, url, handles, self._change_visibility if self.mode == "inprocess" else None)
        return list(seen.values())


def _answering_in_process() -> bool:
    from intentbus_local import direct_calls  # registers botocore handlers: imported once started

    return direct_calls.answering()


def _moto_queue(account_id: str, region: str, name: str) -> Any:
    return _moto_queue_backend(account_id, region).get_queue(name)


def _moto_queue_backend(account_id: str, region: str) -> Any:
    from moto.sqs.models import sqs_backends

    return sqs_backends[account_id][region]


def _started(value: _T | None) -> _T:
    if value is None:
        raise RuntimeError("the local cloud is not running: use it as a context manager or call start()")
    return value
