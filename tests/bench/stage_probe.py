"""One measurement of one Lambda handler in this fresh interpreter, AWS faked at botocore's HTTP send.

``python -m tests.bench.stage_probe SPEC``: SPEC is a JSON file naming the handler's code directory,
the records to feed it, the raw AWS responses to answer with (``tests.bench.stage_capture``), the mode
(``warm``: CPU per record over repeated batches; ``cold``: import and first record) and how many
repeats. The result is written as JSON to the spec's ``result_path``; the handler's own output (its
log lines, as Lambda would ship them) goes wherever the caller sent stdout.

Only the standard library is imported before the clock starts: botocore is patched by an import hook
the moment it loads, so the handler's own imports are timed as Lambda would pay them. Signing,
serializing and parsing run as usual; only the socket is replaced, by the recorded response to the
same request body (else the operation's first recorded one; PutEvents is answered entry by entry).
The calls a workflow's tool makes through its ``ToolContext.clients`` are counted and timed apart too
(``tool_calls_per_batch``, ``tool_ms_per_record``): the clients a ``ToolContext`` is given are wrapped
as ``intentbus.definition`` loads, so a call made through one of their operation methods is the tool's.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.abc
import importlib.machinery
import json
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from types import ModuleType
from typing import Any


class _Fake:
    """The recorded responses, and how long the handler spent inside botocore's calls."""

    def __init__(self, responses: Sequence[dict[str, Any]]) -> None:
        self.by_key: dict[tuple[str, str], dict[str, Any]] = {}
        self.by_operation: dict[str, dict[str, Any]] = {}
        for response in responses:
            self.by_key.setdefault((response["operation"], response["key"]), response)
            self.by_operation.setdefault(response["operation"], response)
        self.operation = ""
        self.inside_seconds = 0.0
        self.calls = 0
        self.in_tool = 0
        """How deep the current call is in calls made through a tool's clients (0: not the tool's)."""
        self.tool_seconds = 0.0
        self.tool_calls = 0
        self.tool_client_seconds = 0.0
        """CPU spent making the clients a tool asked for (its service's model read, its client built)."""
        self.put_events_calls = 0
        self.put_events_entries = 0
        self.operations: list[str] = []
        self.batch_reads: list[dict[tuple[str, str], dict[str, Any]]] | None = None
        """Each captured batch read's items by table and key, in capture order (``_items_asked``)."""

    def answer(self, body: object) -> tuple[int, dict[str, str], bytes]:
        operation = self.operation
        self.operations.append(operation)
        if operation == "PutEvents":
            entries = json.loads(body if isinstance(body, (str, bytes)) else b"{}").get("Entries", [])
            self.put_events_calls += 1
            self.put_events_entries += len(entries)
            accepted = [{"EventId": str(uuid.uuid4())} for _ in entries]
            return 200, _JSON_HEADERS, json.dumps({"FailedEntryCount": 0, "Entries": accepted}).encode()
        raw = body.encode() if isinstance(body, str) else body if isinstance(body, bytes) else b""
        key = hashlib.sha1(raw, usedforsecurity=False).hexdigest()
        recorded = self.by_key.get((operation, key))
        if recorded is None and operation == "BatchGetItem":
            return 200, _JSON_HEADERS, self._items_asked(raw)
        recorded = recorded or self.by_operation.get(operation)
        if recorded is None:
            return 200, _JSON_HEADERS, b"{}"
        return recorded["status"], recorded["headers"], base64.b64decode(recorded["body"])

    def _items_asked(self, raw: bytes) -> bytes:
        """A batch read not captured as asked (a batch of another size): answered from the first captured
        batch read that found any of the asked keys (the read of the batch that held this record when
        captured), with only the asked keys' items, so the record takes the path it took then."""
        if self.batch_reads is None:
            self.batch_reads = [
                {
                    (table, _key_of(item)): item
                    for table, items in json.loads(base64.b64decode(response["body"]) or b"{}")
                    .get("Responses", {})
                    .items()
                    for item in items
                }
                for response in self.by_key.values()
                if response["operation"] == "BatchGetItem"
            ]
        asked = [
            (table, _key_of(key))
            for table, request in json.loads(raw or b"{}").get("RequestItems", {}).items()
            for key in request.get("Keys", [])
        ]
        found: dict[str, list[dict[str, Any]]] = {table: [] for table, _ in asked}
        read = next((items for items in self.batch_reads if any(key in items for key in asked)), {})
        for table, key in asked:
            if (table, key) in read:
                found[table].append(read[(table, key)])
        return json.dumps({"Responses": found, "UnprocessedKeys": {}}).encode()


def _key_of(item: dict[str, Any]) -> str:
    return json.dumps({name: item.get(name) for name in ("pk", "sk", "id")}, sort_keys=True)


_JSON_HEADERS = {"Content-Type": "application/x-amz-json-1.1", "x-amzn-RequestId": "bench"}


def _patch_endpoint(module: ModuleType, fake: _Fake) -> None:
    from botocore.awsrequest import AWSResponse

    endpoint = module.Endpoint
    do_get_response = endpoint._do_get_response

    class _Raw:
        def __init__(self, body: bytes) -> None:
            self._body = body

        def stream(self, **_: Any) -> Any:
            yield self._body

    def named(self: Any, request: Any, operation_model: Any, context: Any) -> Any:
        fake.operation = operation_model.name
        return do_get_response(self, request, operation_model, context)

    def send(self: Any, request: Any) -> Any:
        status, headers, body = fake.answer(request.body)
        answered: Any = headers
        return AWSResponse(request.url, status, answered, _Raw(body))

    endpoint._do_get_response = named
    endpoint._send = send


def _patch_client(module: ModuleType, fake: _Fake) -> None:
    client = module.BaseClient
    make_api_call = client._make_api_call

    def timed(self: Any, operation: str, params: dict[str, Any]) -> Any:
        started = time.process_time()
        try:
            return make_api_call(self, operation, params)
        finally:
            spent = time.process_time() - started
            fake.inside_seconds += spent
            fake.calls += 1
            if fake.in_tool:
                fake.tool_seconds += spent
                fake.tool_calls += 1

    client._make_api_call = timed


class _ToolClient:
    """A client as a tool is given it: each operation called through it is marked as the tool's."""

    def __init__(self, client: Any, fake: _Fake) -> None:
        self._client = client
        self._fake = fake

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._client, name)
        if not callable(found):
            return found
        fake = self._fake

        def marked(*args: Any, **kwargs: Any) -> Any:
            fake.in_tool += 1
            try:
                return found(*args, **kwargs)
            finally:
                fake.in_tool -= 1

        return marked


class _ToolClients:
    def __init__(self, clients: Any, fake: _Fake) -> None:
        self._clients = clients
        self._fake = fake

    def client(self, service_name: str) -> Any:
        started = time.process_time()
        try:
            made = self._clients.client(service_name)
        finally:
            self._fake.tool_client_seconds += time.process_time() - started
        return _ToolClient(made, self._fake)


def _patch_tool_context(module: ModuleType, fake: _Fake) -> None:
    context = module.ToolContext
    init = context.__init__

    def wrapping_clients(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        object.__setattr__(self, "clients", _ToolClients(self.clients, fake))  # a frozen dataclass

    context.__init__ = wrapping_clients


class _PatchOnLoad(importlib.abc.MetaPathFinder):
    """Patches botocore's endpoint and client modules, and ``intentbus.definition``'s ``ToolContext``, as
    they are first imported."""

    def __init__(self, fake: _Fake) -> None:
        self._patches = {
            "botocore.endpoint": _patch_endpoint,
            "botocore.client": _patch_client,
            "intentbus.definition": _patch_tool_context,
        }
        self._fake = fake

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        patch = self._patches.get(name)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader, fake, chosen = spec.loader, self._fake, patch

        class _Patching(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: ModuleType) -> None:
                loader.exec_module(module)
                chosen(module, fake)

        spec.loader = _Patching()
        return spec


class _Context:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.function_name = spec["function_name"]
        self.function_version = "$LATEST"
        self.invoked_function_arn = spec["function_arn"]
        self.memory_limit_in_mb = 512
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def batch(records: Sequence[dict[str, Any]], size: int, turn: int = 0) -> dict[str, Any]:
    """``size`` records cycled from ``records``, each with its own message id, as one SQS event: the
    ``turn``-th batch of the cycle (the captured invocations in order, when each held ``size``)."""
    chosen = []
    start = (turn % batches_in_cycle(records, size)) * size
    for index in range(start, start + size):
        record = dict(records[index % len(records)])
        record["messageId"] = str(uuid.uuid4())
        chosen.append(record)
    return {"Records": chosen}


def batches_in_cycle(records: Sequence[dict[str, Any]], size: int) -> int:
    return max(1, len(records) // size)


def _new_trace(traced: bool) -> None:
    """A new invocation's trace header, as Lambda sets it for each invocation when tracing is on."""
    import os

    if traced:
        root = f"1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]}"
        os.environ["_X_AMZN_TRACE_ID"] = f"Root={root};Parent={uuid.uuid4().hex[:16]};Sampled=1"


PER_INPUT_CACHES = (
    ("intentbus.ids", "_uuid5"),
    ("intentbus.telemetry", "xray_trace_id"),
    ("intentbus.telemetry", "_root_header"),
)
"""The library's caches keyed by what an input carries (its ids, its workflow's trace). A replayed record
would find its own answers there from the cycle before; in production every batch brings new inputs, so
each batch starts without them (a batch still finds what its own records derive twice)."""


def _forget_earlier_inputs() -> None:
    for module_name, name in PER_INPUT_CACHES:
        module = sys.modules.get(module_name)
        if module is not None:
            getattr(module, name).cache_clear()


def _invoke(handler: Any, event: dict[str, Any], spec: dict[str, Any]) -> None:
    _forget_earlier_inputs()
    _new_trace(spec["traced"])
    response = handler(event, _Context(spec))
    failures = (response or {}).get("batchItemFailures")
    if failures:
        raise SystemExit(f"the handler failed {len(failures)} records: {failures[:2]}")


def main(path: str) -> None:
    with open(path) as file:
        spec = json.load(file)
    fake = _Fake(spec["responses"])
    sys.meta_path.insert(0, _PatchOnLoad(fake))
    sys.path[:0] = [spec["code_dir"], *spec["paths"]]
    records, size = spec["records"], spec["batch_size"]
    if spec["mode"] == "cold":
        event = batch(records, 1)
        _new_trace(spec["traced"])
        started, cpu_started = time.perf_counter(), time.process_time()
        app = __import__(spec["module"])
        _invoke(app.lambda_handler, event, spec)
        cold_cpu = (time.process_time() - cpu_started) * 1000
        cold_wall = (time.perf_counter() - started) * 1000
        _report(
            spec,
            {
                "cold_start_ms": cold_cpu,
                "cold_start_wall_ms": cold_wall,
                "cold_tool_ms": (fake.tool_seconds + fake.tool_client_seconds) * 1000,
                "cold_operations": fake.operations,
            },
        )
        return
    app = __import__(spec["module"])
    if spec["mode"] == "profile":
        _profile(app, records, size, spec)
        return
    cycle = batches_in_cycle(records, size)
    for turn in range(spec["warmup"] * cycle):
        _invoke(app.lambda_handler, batch(records, size, turn), spec)
    # One figure per cycle through the captured batches (a stage's batches differ: validate's first holds
    # producers' inputs, its later ones workflows' outcome events), the median over the cycles.
    cpu: list[float] = []
    inside: list[float] = []
    tool: list[float] = []
    calls = puts = entries = tool_calls = 0.0
    for _ in range(max(1, spec["repeats"] // cycle)):
        fake.inside_seconds, fake.calls, fake.put_events_calls, fake.put_events_entries = 0.0, 0, 0, 0
        fake.tool_seconds, fake.tool_calls = 0.0, 0
        spent = 0.0
        for turn in range(cycle):
            event = batch(records, size, turn)
            started = time.process_time()
            _invoke(app.lambda_handler, event, spec)
            spent += time.process_time() - started
        cpu.append(spent * 1000 / (size * cycle))
        inside.append(fake.inside_seconds * 1000 / (size * cycle))
        tool.append(fake.tool_seconds * 1000 / (size * cycle))
        calls, puts, entries, tool_calls = (
            fake.calls / cycle,
            fake.put_events_calls / cycle,
            fake.put_events_entries / cycle,
            fake.tool_calls / cycle,
        )
    result = {
        "cpu_ms_per_record": statistics.median(cpu),
        "botocore_ms_per_record": statistics.median(inside),
        "framework_ms_per_record": statistics.median(c - i for c, i in zip(cpu, inside, strict=True)),
        "tool_ms_per_record": statistics.median(tool),
        "aws_calls_per_batch": calls,
        "tool_calls_per_batch": tool_calls,
        "put_events_calls_per_batch": puts,
        "put_events_entries_per_batch": entries,
    }
    _report(spec, result)


def _report(spec: dict[str, Any], result: dict[str, Any]) -> None:
    with open(spec["result_path"], "w") as file:
        json.dump(result, file)


def _profile(app: Any, records: Sequence[dict[str, Any]], size: int, spec: dict[str, Any]) -> None:
    """Where a warm handler's time goes (``mode: profile``): cProfile's top functions, by own time."""
    import cProfile
    import io
    import pstats

    for turn in range(spec["warmup"]):
        _invoke(app.lambda_handler, batch(records, size, turn), spec)
    profiler = cProfile.Profile()
    profiler.enable()
    for turn in range(spec["repeats"]):
        _invoke(app.lambda_handler, batch(records, size, turn), spec)
    profiler.disable()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text).sort_stats(spec.get("sort", "tottime"))
    stats.print_stats(spec.get("limit", 45))
    _report(spec, {"profile": text.getvalue()})


if __name__ == "__main__":
    main(sys.argv[1])
