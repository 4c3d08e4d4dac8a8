"""Reads template.yaml for the local cloud: the SAM facts it needs and the offline CloudFormation.

The SAM template is the single source of truth. Everything the local cloud provisions comes from
translating it; the few SAM-level facts a deployed function does not expose (where its code lives,
which queue each SQS event reads) come from the original template, read here and nowhere else.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from intentbus_local.template_cache import cached_json

_T = TypeVar("_T")

SERVERLESS_FUNCTION = "AWS::Serverless::Function"
SERVERLESS_LAYER = "AWS::Serverless::LayerVersion"
_CODE_PROPERTY = {SERVERLESS_FUNCTION: "CodeUri", SERVERLESS_LAYER: "ContentUri"}
ARTIFACT_BUCKET = "local"

# Lambda's own defaults when neither the function nor Globals set them.
_DEFAULT_TIMEOUT = 3
_DEFAULT_MEMORY = 128


@dataclass(frozen=True)
class SqsEventSpec:
    name: str
    queue_logical_id: str
    batch_size: int
    batching_window_seconds: int
    report_batch_item_failures: bool


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    code_dir: Path
    handler: str
    timeout: int
    memory_size: int
    sqs_events: tuple[SqsEventSpec, ...]


@dataclass(frozen=True)
class LocalTemplate:
    path: Path
    sam: Mapping[str, Any]
    cloudformation: Mapping[str, Any]
    functions: Mapping[str, FunctionSpec]
    artifacts: tuple[str, ...]
    """Logical ids whose code the translated template expects at ``s3://local/<LogicalId>.zip``."""


SEED_PROJECT = Path(__file__).resolve().parent / "seed_project"
"""The seed template and its functions, shipped with the package (in a checkout: links to the repo's)."""


def default_template_path() -> Path:
    return SEED_PROJECT / "template.yaml"


def artifact_key(logical_id: str) -> str:
    return f"{logical_id}.zip"


def load_template(
    path: Path | None = None,
    *,
    code_dirs: Mapping[str, Path] | None = None,
    region: str = "us-east-1",
) -> LocalTemplate:
    """``code_dirs`` (function logical id -> directory) replaces a function's CodeUri, e.g. for tests."""
    template_path = (path or default_template_path()).resolve()
    sam = read_sam(template_path)
    functions = function_specs(sam, template_path.parent, code_dirs or {})
    artifacts = tuple(
        logical_id for logical_id, resource in sam["Resources"].items() if resource["Type"] in _CODE_PROPERTY
    )
    return LocalTemplate(
        path=template_path,
        sam=sam,
        cloudformation=translate(sam, region=region),
        functions=functions,
        artifacts=artifacts,
    )


def read_sam(path: Path) -> dict[str, Any]:
    """The template with short-form intrinsics (!Ref, !GetAtt, !Sub) as their JSON dicts."""
    text = path.read_text(encoding="utf-8")
    source = _own_digest() + text
    plain: dict[str, Any] = cached_json("sam", "cfn-lint", source, lambda: _decoded(text, path))
    return plain


def _decoded(text: str, path: Path) -> dict[str, Any]:
    from cfnlint.decode import cfn_yaml

    decoded = cfn_yaml.loads(text, str(path))
    plain: dict[str, Any] = json.loads(json.dumps(decoded))  # drop cfn-lint's position-tracking node types
    return plain


def translate(sam: Mapping[str, Any], *, region: str) -> dict[str, Any]:
    """SAM -> CloudFormation, offline, with every code location pointed at ``s3://local/<LogicalId>.zip``."""
    source = _own_digest() + json.dumps([region, sam], sort_keys=True)
    translated: dict[str, Any] = cached_json(
        "cloudformation", "aws-sam-translator", source, lambda: _translated(sam, region=region)
    )
    return translated


@functools.cache
def _own_digest() -> str:
    """This module's source, part of each cache key: its decoding and its rewriting of the template
    (code locations, managed policies) change the answer as much as the libraries' versions do."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _translated(sam: Mapping[str, Any], *, region: str) -> dict[str, Any]:
    import boto3
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    template = copy.deepcopy(dict(sam))
    for logical_id, resource in template["Resources"].items():
        code_property = _CODE_PROPERTY.get(resource["Type"])
        if code_property:
            resource.setdefault("Properties", {})[code_property] = (
                f"s3://{ARTIFACT_BUCKET}/{artifact_key(logical_id)}"
            )
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    translated: dict[str, Any] = translator.translate(
        template, parameter_values={}, get_managed_policy_map=_offline_managed_policies
    )
    return translated


def _offline_managed_policies() -> dict[str, str]:
    """Names SAM may look up when a template lists an AWS managed policy by name (no IAM call)."""
    names = {
        "AWSLambdaBasicExecutionRole": "service-role/AWSLambdaBasicExecutionRole",
        "AWSLambdaSQSQueueExecutionRole": "service-role/AWSLambdaSQSQueueExecutionRole",
        "AWSLambdaDynamoDBExecutionRole": "service-role/AWSLambdaDynamoDBExecutionRole",
        "AWSXrayWriteOnlyAccess": "AWSXrayWriteOnlyAccess",
        "AWSXRayDaemonWriteAccess": "AWSXRayDaemonWriteAccess",
        "CloudWatchLambdaInsightsExecutionRolePolicy": "CloudWatchLambdaInsightsExecutionRolePolicy",
    }
    return {name: f"arn:aws:iam::aws:policy/{path}" for name, path in names.items()}


def function_specs(
    sam: Mapping[str, Any], root: Path, code_dirs: Mapping[str, Path]
) -> dict[str, FunctionSpec]:
    resources: Mapping[str, Any] = sam["Resources"]
    unknown = set(code_dirs) - {lid for lid, r in resources.items() if r["Type"] == SERVERLESS_FUNCTION}
    if unknown:
        raise ValueError(f"code_dirs names functions the template does not declare: {sorted(unknown)}")
    globals_ = sam.get("Globals", {}).get("Function", {})
    specs: dict[str, FunctionSpec] = {}
    for logical_id, resource in resources.items():
        if resource["Type"] != SERVERLESS_FUNCTION:
            continue
        props: Mapping[str, Any] = resource.get("Properties", {})
        code_uri = props.get("CodeUri", globals_.get("CodeUri"))
        if logical_id in code_dirs:
            code_dir = Path(code_dirs[logical_id]).resolve()
        elif isinstance(code_uri, str) and not code_uri.startswith("s3://"):
            code_dir = (root / code_uri).resolve()
        else:
            raise ValueError(f"{logical_id}: CodeUri must be a local directory, got {code_uri!r}")
        specs[logical_id] = FunctionSpec(
            logical_id=logical_id,
            code_dir=code_dir,
            handler=_literal(logical_id, "Handler", props.get("Handler", globals_.get("Handler")), str),
            timeout=_literal(
                logical_id, "Timeout", props.get("Timeout", globals_.get("Timeout", _DEFAULT_TIMEOUT)), int
            ),
            memory_size=_literal(
                logical_id,
                "MemorySize",
                props.get("MemorySize", globals_.get("MemorySize", _DEFAULT_MEMORY)),
                int,
            ),
            sqs_events=tuple(
                _sqs_event(logical_id, name, event)
                for name, event in props.get("Events", {}).items()
                if event.get("Type") == "SQS"
            ),
        )
    return specs


def _sqs_event(function_id: str, name: str, event: Mapping[str, Any]) -> SqsEventSpec:
    props: Mapping[str, Any] = event.get("Properties", {})
    return SqsEventSpec(
        name=name,
        queue_logical_id=_queue_logical_id(function_id, props.get("Queue")),
        batch_size=_literal(function_id, f"{name}.BatchSize", props.get("BatchSize", 10), int),
        batching_window_seconds=_literal(
            function_id,
            f"{name}.MaximumBatchingWindowInSeconds",
            props.get("MaximumBatchingWindowInSeconds", 0),
            int,
        ),
        report_batch_item_failures="ReportBatchItemFailures" in props.get("FunctionResponseTypes", []),
    )


def _queue_logical_id(function_id: str, queue: Any) -> str:
    if isinstance(queue, dict) and "Fn::GetAtt" in queue:
        target = queue["Fn::GetAtt"]
        parts = target.split(".", 1) if isinstance(target, str) else list(target)
        if len(parts) == 2 and parts[1] == "Arn":
            return str(parts[0])
    raise ValueError(f"{function_id}: an SQS event's Queue must be !GetAtt <Queue>.Arn, got {queue!r}")


def _literal(function_id: str, name: str, value: Any, kind: type[_T]) -> _T:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{function_id}: {name} must be a literal {kind.__name__}, got {value!r}")
    return value
