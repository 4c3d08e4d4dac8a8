"""moto's DynamoDB results turned into plain values with one type check per value.

On moto 5.2.6 every DynamoDB response goes through ``DynamoResult``, whose ``dynamo_to_dict`` walks the
whole result and asks each value, in turn, whether it is a ``datetime``, a ``DynamoType``, has a
``to_json`` (a failed attribute lookup for every text and number) and is a dict or a list. A
BatchGetItem of a workflow's items is thousands of values: 1.5% of the fault harness's CPU.

For a value whose type is exactly ``str``, ``int``, ``float``, ``bool``, ``bytes``, ``Decimal`` or
``None`` (none is a datetime or has ``to_json``), exactly ``dict`` or ``list``, or exactly
``DynamoType`` of a type other than ``B``/``BS``, moto's function answers the value itself, the
converted dict or list, or ``{type: converted value}``; the replacement answers that directly. Every
other value (a binary, a datetime, a model with ``to_json``, a subclass) goes to moto's own function.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.dynamodb.responses.DynamoResult.__init__": "e2394775cd5ef6ad",
        "moto.dynamodb.models.utilities.dynamo_to_dict": "80f600124c13ddcb",
    },
)
_AS_IS = frozenset({str, int, float, bool, bytes, Decimal, type(None)})


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.dynamodb import responses
    from moto.dynamodb.models import dynamo_type, utilities

    if "DynamoResult.__init__" not in PINS.replaced:
        plain = converter(utilities.dynamo_to_dict, dynamo_type.DynamoType)
        PINS.replace(responses.DynamoResult, "__init__", _init_for(responses.DynamoResult, plain))


def converter(moto_own: Any, dynamo_type: type) -> Any:
    """``dynamo_to_dict`` answering the plain values itself, handing any other to ``moto_own``."""
    as_is = _AS_IS

    def plain(value: Any) -> Any:
        kind = type(value)
        if kind in as_is:
            return value
        if kind is dict:
            return {key: plain(item) for key, item in value.items()}
        if kind is list:
            return [plain(item) for item in value]
        if kind is dynamo_type and value.type not in ("B", "BS"):
            return {value.type: plain(value.value)}
        return moto_own(value)

    return plain


def _init_for(result_class: Any, plain: Any) -> Any:
    def __init__(self: Any, result: object) -> None:
        super(result_class, self).__init__(plain(result))

    return __init__
