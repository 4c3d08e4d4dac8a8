"""moto's response serializer told once, not on every member of every response, where a value lives.

moto 5.2.5 (``moto/core/serialize.py``) serializes a response by walking the operation's output shape;
for each member it builds an ``AttributePickerContext`` and asks ``XFormedAttributePicker`` for the
keys the value may be under: six alias providers, instantiated for that one member, each looking at
the key, the shape, its parent and the object's class, and botocore's ``xform_name`` of each. A
DynamoDB item is a map of attribute values, each a structure of ten members, so one BatchGetItem of
a workflow's items asks this thousands of times: a sixth of a local run went there.

For a plain ``dict`` (what moto's DynamoDB, SQS and EventBridge responses are made of) the answer
depends on the key, the member's shape and that shape's parent only (a dict has no ``Meta`` and its
class name is always ``dict``), so ``ResponseSerializer.get_value`` here asks once per (key, shape,
parent) and looks the value up under the keys it got, in moto's order. Any other object, a picker
with response transformers or other alias providers goes through moto's own code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.5",
    sources={
        "moto.core.serialize.ResponseSerializer.get_value": "5ac16904b91c2935",
        "moto.core.serialize.AttributePicker.__call__": "c15da8ec29c1afa4",
        "moto.core.serialize.AttributePicker.get_possible_keys": "cb284052c5ea7fe1",
        "moto.core.serialize.XFormedAttributePicker.get_possible_keys": "f0d20f55f37fd8a1",
        # the two alias providers that look at the object rather than the shape
        "moto.core.serialize.ExplicitAlias.has_alias": "1d7d27db6ed09fa4",
        "moto.core.serialize.ClassPrefixAlias.has_alias": "b2e0c50e1aa5ec92",
    },
)

_KeysFor = tuple[Any, Any, tuple[str, ...]]
"""(shape, parent, the keys to look under): the shape and parent held so their ids stay theirs."""


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.core import serialize

    if "ResponseSerializer.get_value" not in PINS.replaced:
        PINS.replace(serialize.ResponseSerializer, "get_value", _get_value_for(serialize))


def _get_value_for(serialize: Any) -> Callable[..., Any]:
    original = vars(serialize.ResponseSerializer)["get_value"]
    picker_class = serialize.XFormedAttributePicker
    defaults = serialize.DEFAULT_ALIAS_PROVIDERS
    missing = serialize.MISSING
    known: dict[tuple[str, int, int], _KeysFor] = {}

    def get_value(self: Any, value: Any, key: str, shape: Any) -> Any:
        picker = self._value_picker
        if (
            type(value) is not dict
            or type(picker) is not picker_class
            or picker.response_transformers
            or picker.alias_providers is not defaults
        ):
            return original(self, value, key, shape)
        parent = getattr(shape, "parent", None)
        found = known.get((key, id(shape), id(parent)))
        if found is None or found[0] is not shape or found[1] is not parent:
            context = serialize.AttributePickerContext(obj=value, key=key, shape=shape)
            found = (shape, parent, tuple(picker.get_possible_keys(context)))
            known[(key, id(shape), id(parent))] = found
        for possible_key in found[2]:
            picked = serialize.get_value(value, possible_key, missing)
            if picked is not missing:
                return picked
        return None

    return get_value
