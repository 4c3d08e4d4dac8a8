"""The fixes to moto (5.x, found on 5.2.5) the local cloud needs, applied before it deploys.

tests/integration/test_moto_fixes.py (and, for the layer, tests/integration/test_redeploy.py) runs
moto's own code and fails once a moto release fixes its bug, so a fix is dropped rather than kept past
its need.

``Ref`` of a layer version. moto's CloudFormation resolves ``Ref`` to the model's
``physical_resource_id`` and, when the model has none, to the model object itself (``clean_json`` in
moto/cloudformation/parsing.py). ``moto.awslambda.models.LayerVersion`` has none, so a function's
``Layers: [!Ref IntentbusLayer]`` resolves to ``[<LayerVersion>]``. Creating the function never reads
``Layers``, which hides the problem; updating it does (``update_configuration`` -> ``_get_layers_data``
-> ``split_layer_arn(<LayerVersion>)``), and UpdateStack fails with ``'LayerVersion' object has no
attribute 'replace'`` after some functions were already changed. On AWS, ``Ref`` of a layer version is
its version ARN: the fix gives moto's model that physical id, and nothing else.

``AWS::Events::Archive`` from CloudFormation. Its ``EventPattern`` is a JSON object in a template, but
moto's ``Archive.create_from_cloudformation_json`` hands it on as is and its pattern parser calls
``json.loads`` on it: a TypeError. moto's update reads ``Retention`` where the property is
``RetentionDays``, and a name moto generates (stack-logical id-suffix) may pass the 48 characters an
archive name may have. The fix passes the pattern as JSON text, the retention under moto's key, and a
generated name cut to 48 characters.

Disabled rules. moto delivers every event to every rule whose pattern matches, ``DISABLED`` or not
(``Rule.send_to_targets`` never reads ``state``). On AWS a disabled rule delivers nothing: the fix.

``AWS::NoValue`` in a list. CloudFormation drops a list item that resolves to ``AWS::NoValue``
(``Layers: [!Ref IntentbusLayer, !If [UsingOtelCollectorLayer, !Ref OtelCollectorLayerArn, !Ref
AWS::NoValue]]``); moto's ``clean_json`` drops such a value from a mapping but keeps it in a list as
``None``, and UpdateStack then fails on the function's layers (``'NoneType' object has no attribute
'replace'``). The fix drops the ``None`` items of a list it resolved.

Replays. moto's ``Replay.replay_events`` sends every archived event, whatever its time, to every rule
of the bus, whatever ``Destination.FilterArns`` names. On AWS a replay sends the events whose time is
in [EventStartTime, EventEndTime) to the rules FilterArns names (all of the bus's rules without it),
each marked with ``replay-name``: the fix replays that way.

Message sizes. moto's PutEvents accepts entries of any size. On AWS the entries of one request may have
256 KB together, counted as "Calculating PutEvents event entry size" says (Time 14 bytes; Source,
DetailType, Detail and each of Resources in UTF-8); a larger request is refused whole with a
``ValidationException`` "Total size of the entries in the request is over the limit." (an entry over
256 KB makes its request over it). moto's SQS compares a body's *characters* with the queue's
MaximumMessageSize and leaves message attributes out; AWS counts the bytes of the body and of each
attribute's name, type and value (1 MiB at most since August 2025): the fix counts as AWS does. A batch
whose bodies pass 1 MiB together is refused as moto already does.

A queue's ``RedrivePolicy`` on UpdateStack. moto's ``Queue.update_from_cloudformation_json`` updates
``VisibilityTimeout`` and ``ReceiveMessageWaitTimeSeconds`` only: a redrive policy added (or removed)
by a redeploy, as turning ``RepairQuarantined`` on adds one to the quarantine queue, never reaches the
queue. On AWS it does: the fix sets (or clears) it after moto's own update.

Transactions copy whole tables. To roll a failed ``TransactWriteItems`` back, moto deep-copies every
table the transaction names before it writes (``DynamoDBBackend.transact_write_items``), so each
transaction costs time in proportion to the table: most of a long local run went there, and the run
slowed as the workflow table grew. The fix lets moto skip that copy and instead keeps the items the
transaction writes (at most 100, read by key), putting them back — or deleting the ones that did not
exist — when the transaction fails. The outcome is the same, the cost independent of the table's size,
and the table stays the same object (moto's rollback swapped in its copy).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from intentbus_local import events_hot_paths

FOUND_ON = "5.2.5"
ARCHIVE_NAME_MAX = 48
"""EventBridge's limit on an archive's name."""

_MOTO: dict[str, Callable[..., Any]] = {}
"""moto's own functions that a fix replaced, by ``Class.method`` (the pinned tests run them)."""


def apply() -> None:
    """Idempotent. The layer fix steps aside once moto's LayerVersion has a physical id of its own; the
    others stay until their pinned tests say moto fixed its bug."""
    _fix_layer_ref()
    _fix_no_value_in_lists()
    _fix_archive_from_cloudformation()
    _fix_disabled_rules()
    _fix_replay()
    _fix_put_events_size()
    _fix_sqs_message_size()
    _fix_queue_update()
    _fix_transaction_rollback()


def moto_original(name: str) -> Callable[..., Any]:
    """moto's own ``Class.method`` that ``apply`` replaced (KeyError if it replaced none)."""
    return _MOTO[name]


# ---------------------------------------------------------------------------------- layer versions


def _layer_version_arn(layer_version: Any) -> str:
    return str(layer_version.arn)


def _fix_layer_ref() -> None:
    from moto.awslambda.models import LayerVersion

    if "physical_resource_id" not in vars(LayerVersion):
        LayerVersion.physical_resource_id = property(_layer_version_arn)  # type: ignore[attr-defined]


def layer_ref_fixed_here() -> bool:
    """Whether moto's LayerVersion gets its physical id from this module (i.e. moto still needs it)."""
    from moto.awslambda.models import LayerVersion

    found = vars(LayerVersion).get("physical_resource_id")
    return isinstance(found, property) and found.fget is _layer_version_arn


# ---------------------------------------------------------------------------------- AWS::NoValue


def _fix_no_value_in_lists() -> None:
    from moto.cloudformation import parsing

    if "parsing.clean_json" in _MOTO:
        return
    original = _MOTO["parsing.clean_json"] = parsing.clean_json

    def clean_json(resource_json: Any, resources_map: Any) -> Any:
        cleaned = original(resource_json, resources_map)  # recurses through this one: module global
        if isinstance(resource_json, list) and isinstance(cleaned, list):
            return [item for item in cleaned if item is not None]
        return cleaned

    parsing.clean_json = clean_json


# ---------------------------------------------------------------------------------- archives


def _archive_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    fixed = dict(properties)
    if isinstance(fixed.get("EventPattern"), dict):
        fixed["EventPattern"] = json.dumps(fixed["EventPattern"])
    if "RetentionDays" in fixed:
        fixed["Retention"] = fixed["RetentionDays"]
    return fixed


def _archive_name(resource_name: str, properties: Mapping[str, Any]) -> str:
    if "ArchiveName" in properties or len(resource_name) <= ARCHIVE_NAME_MAX:
        return resource_name
    prefix, _, suffix = resource_name.rpartition("-")
    return f"{prefix[: ARCHIVE_NAME_MAX - len(suffix) - 1]}-{suffix}"


def _fix_archive_from_cloudformation() -> None:
    from moto.events.models import Archive

    if "Archive.create_from_cloudformation_json" in _MOTO:
        return
    create = vars(Archive)["create_from_cloudformation_json"].__func__
    update = vars(Archive)["update_from_cloudformation_json"].__func__
    _MOTO["Archive.create_from_cloudformation_json"] = create
    _MOTO["Archive.update_from_cloudformation_json"] = update

    def create_fixed(cls: Any, name: str, cloudformation_json: Any, *args: Any, **kwargs: Any) -> Any:
        properties = cloudformation_json["Properties"]
        fixed = {**cloudformation_json, "Properties": _archive_properties(properties)}
        return create(cls, _archive_name(name, properties), fixed, *args, **kwargs)

    def update_fixed(cls: Any, original: Any, new_name: str, cloudformation_json: Any, *args: Any) -> Any:
        properties = cloudformation_json["Properties"]
        fixed = {**cloudformation_json, "Properties": _archive_properties(properties)}
        return update(cls, original, _archive_name(new_name, properties), fixed, *args)

    Archive.create_from_cloudformation_json = classmethod(create_fixed)  # type: ignore[method-assign,assignment]
    Archive.update_from_cloudformation_json = classmethod(update_fixed)  # type: ignore[method-assign,assignment]


# ---------------------------------------------------------------------------------- disabled rules


def _fix_disabled_rules() -> None:
    from moto.events.models import Rule

    if "Rule.send_to_targets" in _MOTO:
        return
    send = vars(Rule)["send_to_targets"]
    _MOTO["Rule.send_to_targets"] = send

    def send_if_enabled(self: Any, original_event: Any, transform_input: bool = True) -> None:
        if self.state != "DISABLED":
            send(self, original_event, transform_input)

    Rule.send_to_targets = send_if_enabled  # type: ignore[method-assign]


# ---------------------------------------------------------------------------------- replays


def epoch_seconds(value: Any) -> float:
    """An EventBridge time as moto holds it (epoch seconds, as a number or text, or a datetime)."""
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value)


def _replay_events(replay: Any, archive: Any) -> None:
    from moto.core.utils import unix_time
    from moto.events.models import ReplayState, events_backends
    from moto.moto_api._internal import mock_random

    backend = events_backends[replay.account_id][replay.region]
    bus = backend.describe_event_bus(replay.destination["Arn"].split("/")[-1])
    chosen = set(replay.destination.get("FilterArns") or ())
    rules = [rule for rule in bus.rules.values() if not chosen or rule.arn in chosen]
    start, end = epoch_seconds(replay.event_start_time), epoch_seconds(replay.event_end_time)
    for event in list(archive.events):
        if not start <= epoch_seconds(event["time"]) < end:
            continue
        replayed: Any = dict(event, **{"id": str(mock_random.uuid4()), "replay-name": replay.name})
        for rule in rules:
            rule.send_to_targets(replayed, transform_input=False)
    replay.state = ReplayState.COMPLETED
    replay.end_time = unix_time()


def _fix_replay() -> None:
    from moto.events.models import Replay

    if "Replay.replay_events" in _MOTO:
        return
    _MOTO["Replay.replay_events"] = vars(Replay)["replay_events"]
    Replay.replay_events = _replay_events  # type: ignore[method-assign,assignment]


# ---------------------------------------------------------------------------------- message sizes

PUT_EVENTS_TOO_LARGE = "Total size of the entries in the request is over the limit."


def _put_events_size(events: list[dict[str, Any]]) -> int:
    from intentbus.limits import entry_size

    return sum(entry_size(event) for event in events)


def _fix_put_events_size() -> None:
    from moto.events.exceptions import ValidationException
    from moto.events.models import EventsBackend, Rule

    if "EventsBackend.put_events" in _MOTO:
        return
    _MOTO["EventsBackend.put_events"] = vars(EventsBackend)["put_events"]
    put_events = events_hot_paths.matching_first(
        _MOTO["EventsBackend.put_events"],
        _MOTO.get("Rule.send_to_targets") or vars(Rule)["send_to_targets"],
    )

    def put_events_within_limit(self: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from intentbus.limits import PUT_EVENTS_LIMIT_BYTES

        if _put_events_size(events) > PUT_EVENTS_LIMIT_BYTES:
            raise ValidationException(PUT_EVENTS_TOO_LARGE)
        result: list[dict[str, Any]] = put_events(self, events)
        return result

    EventsBackend.put_events = put_events_within_limit  # type: ignore[method-assign]


def sqs_message_size(body: str, attributes: Mapping[str, Any] | None) -> int:
    """An SQS message's size as AWS counts it: the body's bytes, and each attribute's name, data type
    and value."""
    size = len(body.encode("utf-8", "surrogatepass"))
    for name, attribute in (attributes or {}).items():
        size += len(name.encode()) + len(str(attribute.get("data_type", attribute.get("DataType", ""))))
        for key in ("string_value", "StringValue", "binary_value", "BinaryValue"):
            value = attribute.get(key)
            if value is not None:
                size += len(value) if isinstance(value, bytes) else len(str(value).encode())
    return size


def _fix_sqs_message_size() -> None:
    from moto.sqs.exceptions import InvalidParameterValue
    from moto.sqs.models import SQSBackend

    if "SQSBackend.send_message" in _MOTO:
        return
    send_message = vars(SQSBackend)["send_message"]
    _MOTO["SQSBackend.send_message"] = send_message

    def send_message_within_limit(
        self: Any,
        queue_name: str,
        message_body: str,
        message_attributes: dict[str, Any] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        limit = int(self.get_queue(queue_name).maximum_message_size)
        if sqs_message_size(message_body, message_attributes) > limit:
            raise InvalidParameterValue(
                f"One or more parameters are invalid. Reason: Message must be shorter than {limit} bytes."
            )
        return send_message(self, queue_name, message_body, message_attributes, *args, **kwargs)

    SQSBackend.send_message = send_message_within_limit  # type: ignore[method-assign]


# ---------------------------------------------------------------------------------- queue updates


def _fix_queue_update() -> None:
    from moto.sqs.models import Queue

    if "Queue.update_from_cloudformation_json" in _MOTO:
        return
    update = vars(Queue)["update_from_cloudformation_json"].__func__
    _MOTO["Queue.update_from_cloudformation_json"] = update

    def update_fixed(cls: Any, /, **arguments: Any) -> Any:  # moto passes them by name
        queue = update(cls, **arguments)
        policy = arguments["cloudformation_json"].get("Properties", {}).get("RedrivePolicy")
        queue._setup_dlq(policy if isinstance(policy, dict | str) else {})  # {}: none
        return queue

    Queue.update_from_cloudformation_json = classmethod(update_fixed)  # type: ignore[method-assign,assignment]


# ---------------------------------------------------------------------------------- transactions


def _fix_transaction_rollback() -> None:
    import copy

    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    if "DynamoDBBackend.transact_write_items" in _MOTO:
        return
    transact_write_items = vars(models.DynamoDBBackend)["transact_write_items"]
    _MOTO["DynamoDBBackend.transact_write_items"] = transact_write_items

    class _TablesKept:
        """The ``copy`` module as moto's DynamoDB models see it: a table is not copied (the fix keeps the
        items a transaction writes instead); anything else is, as before."""

        @staticmethod
        def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    models.copy = _TablesKept  # type: ignore[assignment,attr-defined]

    def transact_write_items_keeping_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        before = _items_written(self, transact_items)
        try:
            transact_write_items(self, transact_items)
        except Exception:
            for table_name, key, attributes in before:
                if attributes is None:
                    self.delete_item(table_name, key)
                else:
                    self.put_item(table_name, attributes)
            raise

    models.DynamoDBBackend.transact_write_items = transact_write_items_keeping_items  # type: ignore[method-assign]


def _items_written(
    backend: Any, transact_items: list[dict[str, Any]]
) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """(table, key, the item's attributes before; ``None``: no item) for each item the transaction may
    write. An operation moto will refuse on its own (no table, a malformed key) is left out."""
    import copy

    kept: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
    for operation in transact_items:
        kind, details = next(iter(operation.items()))
        if kind not in {"Put", "Delete", "Update"}:
            continue
        try:
            table_name = details["TableName"]
            table = backend.get_table(table_name)
            if kind == "Put":
                names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
                key = {name: details["Item"][name] for name in names}
            else:
                key = details["Key"]
            item = backend.get_item(table_name, key)
        except Exception:  # moto raises its own error for this operation when it runs it
            continue
        kept.append((table_name, key, None if item is None else copy.deepcopy(item.to_json()["Attributes"])))
    return kept
