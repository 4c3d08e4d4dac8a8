"""The local cloud: template.yaml on moto, with Lambda's SQS event-source mappings played in-process;
the functions run in this process from the source tree, or each in its own from a sam build."""

from intentbus_local.backend import Mode
from intentbus_local.clock import LocalClock
from intentbus_local.cloud import LocalCloud, NotIdleError, PutEventsError, QueueMessage, RunSummary
from intentbus_local.lambda_runtime import FakeLambdaContext, FunctionTimeoutError, Invocation
from intentbus_local.template import FunctionSpec, LocalTemplate, SqsEventSpec, load_template
from intentbus_local.topology import FunctionInfo, MappingInfo, QueueInfo, Topology

__all__ = [
    "FakeLambdaContext",
    "FunctionInfo",
    "FunctionSpec",
    "FunctionTimeoutError",
    "Invocation",
    "LocalClock",
    "LocalCloud",
    "LocalTemplate",
    "MappingInfo",
    "Mode",
    "NotIdleError",
    "PutEventsError",
    "QueueInfo",
    "QueueMessage",
    "RunSummary",
    "SqsEventSpec",
    "Topology",
    "load_template",
]
