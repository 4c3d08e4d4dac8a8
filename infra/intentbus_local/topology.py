"""What a provisioned stack looks like, as read back from the (moto) cloud after deployment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class QueueInfo:
    logical_id: str
    url: str
    arn: str
    name: str


@dataclass(frozen=True)
class MappingInfo:
    """One SQS event-source mapping, with the queue facts the poller needs to play it."""

    function_logical_id: str
    queue: QueueInfo
    batch_size: int
    batching_window_seconds: int
    report_batch_item_failures: bool
    visibility_timeout: int
    max_receive_count: int | None
    dlq: QueueInfo | None


@dataclass(frozen=True)
class FunctionInfo:
    logical_id: str
    name: str
    arn: str
    code_dir: Path
    handler: str
    timeout: int
    memory_size: int
    environment: Mapping[str, str]
    """Environment variables as the deployed function has them, every intrinsic resolved."""
    mappings: tuple[MappingInfo, ...]


@dataclass(frozen=True)
class Topology:
    stack_name: str
    account_id: str
    region: str
    bus_name: str
    """The pipeline's bus (``EventBus``): its facts and the workflows' domain events."""
    bus_arn: str
    ingress_bus_name: str
    """The producers' bus (``IngressBus``): everything put on it goes to validate."""
    ingress_bus_arn: str
    queues: Mapping[str, QueueInfo]
    tables: Mapping[str, str]
    """Table logical id -> table name."""
    dlqs: Mapping[str, QueueInfo]
    """Stage queue logical id -> its dead-letter queue."""
    functions: Mapping[str, FunctionInfo]
    outputs: Mapping[str, str]
    direct_resources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Resources created through their own APIs (direct_resources.py), by logical id: ``Ref`` and each
    ``Fn::GetAtt`` attribute -> value. A redeploy reuses them."""

    @property
    def mappings(self) -> tuple[MappingInfo, ...]:
        return tuple(m for f in self.functions.values() for m in f.mappings)

    @property
    def stage_queues(self) -> tuple[QueueInfo, ...]:
        """Queues some function consumes, in template order of the functions."""
        return tuple(m.queue for m in self.mappings)

    def function_for_queue(self, queue_logical_id: str) -> FunctionInfo:
        for function in self.functions.values():
            if any(m.queue.logical_id == queue_logical_id for m in function.mappings):
                return function
        raise KeyError(f"no function consumes {queue_logical_id}")
