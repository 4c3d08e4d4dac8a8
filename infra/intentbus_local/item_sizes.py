"""moto's DynamoDB item built with its 400 KB check in one pass over its attributes, not one per attribute.

On moto 5.2.6 ``Item.__init__`` puts each attribute into a ``LimitedSizeDict``, whose ``__setitem__``
adds up the size of every attribute already there (``DynamoType.size``, recursive) before it adds
the new one: an item of n attributes costs n²/2 size computations, and every PutItem, every
projection and every item a transaction writes builds one. The fault harness's workflow items (20 to
40 attributes) spent 1.5% of its CPU there.

The replacement keeps the running total: at each attribute it is what moto's sum gives (a ``str``
name counts ``bytesize(str(name))`` = ``bytesize(name)``, a value its ``size()``; nothing else writes to
the new dict meanwhile), so the same attribute raises ``ItemSizeTooLarge`` at the same point, after the
same ``DynamoType`` conversions. Attributes given as anything but a plain ``dict`` with ``str`` names,
and subclasses of ``Item``, go through moto's own ``__init__``.
"""

from __future__ import annotations

from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.dynamodb.models.dynamo_type.Item.__init__": "d9c12b62cb921831",
        "moto.dynamodb.models.dynamo_type.LimitedSizeDict.__setitem__": "d979580fdbe14f79",
        "moto.dynamodb.models.dynamo_type.LimitedSizeDict.__init__": "f015127701951e73",
    },
)


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.dynamodb.models import dynamo_type

    if "Item.__init__" not in PINS.replaced:
        PINS.replace(dynamo_type.Item, "__init__", _init_for(dynamo_type))


def _init_for(module: Any) -> Any:
    item_class = module.Item
    original = vars(item_class)["__init__"]
    limited_size_dict = module.LimitedSizeDict
    dynamo_type = module.DynamoType
    bytesize = module.bytesize
    too_large = module.ItemSizeTooLarge
    limit = 405000  # LimitedSizeDict.__setitem__'s
    put = dict.__setitem__

    def __init__(self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:
        if (
            type(self) is not item_class
            or type(attrs) is not dict
            or any(type(key) is not str for key in attrs)
        ):
            original(self, hash_key, range_key, attrs)
            return
        self.hash_key = hash_key
        self.range_key = range_key
        self.attrs = limited = limited_size_dict()
        total = 0
        for key, value in attrs.items():
            typed = dynamo_type(value)
            added = bytesize(key) + typed.size()
            if total + added > limit:
                raise too_large
            put(limited, key, typed)
            total += added

    return __init__
