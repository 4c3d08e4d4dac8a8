"""Where the operator commands look: a deployed stack's resources, or names given one by one.

``--stack`` (or ``$INTENTBUS_STACK``) names the CloudFormation stack; its resources are read once
(ListStackResources) by logical id: ``WorkflowTable``, ``QuarantineQueue``, ``<Stage>Queue`` and every
queue whose logical id ends in ``DLQ``. ``--table`` / ``--queue`` (or ``$WORKFLOW_TABLE`` /
``$QUARANTINE_QUEUE_URL``) name one resource directly and win over the stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from intentbus.adapters.clients import AwsClients
from intentbus.errors import ConfigurationError

QUEUE_TYPE = "AWS::SQS::Queue"


@dataclass(frozen=True)
class Queue:
    name: str
    """The logical id when it came from the stack, else the queue's name."""
    url: str


@dataclass
class Target:
    stack: str | None
    endpoint_url: str | None = None
    _clients: AwsClients | None = None
    _resources: dict[str, tuple[str, str]] | None = field(default=None, repr=False)

    @property
    def clients(self) -> AwsClients:
        if self._clients is None:
            self._clients = AwsClients(endpoint_url=self.endpoint_url)
        return self._clients

    def resources(self) -> dict[str, tuple[str, str]]:
        """Logical id -> (type, physical id) of the stack."""
        if self.stack is None:
            raise ConfigurationError("no stack: pass --stack NAME or set INTENTBUS_STACK")
        if self._resources is None:
            found: dict[str, tuple[str, str]] = {}
            paginator = self.clients.client("cloudformation").get_paginator("list_stack_resources")
            for page in paginator.paginate(StackName=self.stack):
                for summary in page["StackResourceSummaries"]:
                    if summary.get("PhysicalResourceId"):
                        found[summary["LogicalResourceId"]] = (
                            summary["ResourceType"],
                            summary["PhysicalResourceId"],
                        )
            self._resources = found
        return self._resources

    def physical(self, logical_id: str) -> str:
        found = self.resources().get(logical_id)
        if found is None:
            raise ConfigurationError(f"stack {self.stack} has no resource {logical_id}")
        return found[1]

    def workflow_table(self, table: str | None) -> str:
        if table:
            return table
        if self.stack is None:
            raise ConfigurationError(
                "no workflow table: pass --table or --stack (or set WORKFLOW_TABLE or INTENTBUS_STACK)"
            )
        return self.physical("WorkflowTable")

    def queue(self, given: str | None, *, default_logical_id: str, what: str) -> Queue:
        """One queue: a URL, a logical id of the stack, or a queue name; else the stack's default."""
        if given and given.startswith(("https://", "http://")):
            return Queue(name=given.rstrip("/").rsplit("/", 1)[-1], url=given)
        if given and self.stack is not None and given in self.resources():
            return Queue(name=given, url=self.physical(given))
        if given:
            url = self.clients.client("sqs").get_queue_url(QueueName=given)["QueueUrl"]
            return Queue(name=given, url=str(url))
        if self.stack is None:
            raise ConfigurationError(f"no {what}: pass --queue or --stack (or set INTENTBUS_STACK)")
        return Queue(name=default_logical_id, url=self.physical(default_logical_id))

    def dead_letter_queues(self, given: str | None) -> list[Queue]:
        """The one named, or every queue of the stack whose logical id ends in DLQ."""
        if given:
            return [self.queue(given, default_logical_id="", what="DLQ")]
        if self.stack is None:
            raise ConfigurationError("no DLQ: pass --queue URL or --stack NAME (or set INTENTBUS_STACK)")
        return [
            Queue(name=logical_id, url=physical)
            for logical_id, (kind, physical) in self.resources().items()
            if kind == QUEUE_TYPE and logical_id.endswith("DLQ")
        ]

    def stage_queue(self, stage: str) -> Queue:
        logical_id = f"{stage[:1].upper()}{stage[1:]}Queue"
        return Queue(name=logical_id, url=self.physical(logical_id))

    def client(self, service: str) -> Any:
        return self.clients.client(service)
