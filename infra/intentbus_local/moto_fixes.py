"""The one fix to moto that a redeploy needs, applied by the local cloud before it deploys.

``Ref`` of a layer version (moto 5.x, found on 5.2.5). moto's CloudFormation resolves ``Ref`` to the
model's ``physical_resource_id`` and, when the model has none, to the model object itself
(``clean_json`` in moto/cloudformation/parsing.py). ``moto.awslambda.models.LayerVersion`` has none, so
a function's ``Layers: [!Ref IntentbusLayer]`` resolves to ``[<LayerVersion>]``. Creating the function
never reads ``Layers`` (``LambdaFunction.create_from_cloudformation_json`` does not pass it on), which
hides the problem; updating it does: ``update_configuration`` -> ``_get_layers_data`` ->
``layers_versions_by_arn`` -> ``split_layer_arn(<LayerVersion>)``, and UpdateStack fails with
``'LayerVersion' object has no attribute 'replace'`` after some functions were already changed.

On AWS, ``Ref`` of an ``AWS::Lambda::LayerVersion`` is its version ARN: the fix gives moto's model that
physical id, and nothing else. It is applied only while moto's class has no ``physical_resource_id`` of
its own; tests/integration/test_redeploy.py fails once a moto release defines one, so the fix is
dropped rather than kept past its need.
"""

from __future__ import annotations

from typing import Any

FOUND_ON = "5.2.5"


def _layer_version_arn(layer_version: Any) -> str:
    return str(layer_version.arn)


def apply() -> None:
    """Idempotent; a no-op on a moto whose LayerVersion has a physical id of its own."""
    from moto.awslambda.models import LayerVersion

    if "physical_resource_id" not in vars(LayerVersion):
        LayerVersion.physical_resource_id = property(_layer_version_arn)  # type: ignore[attr-defined]


def layer_ref_fixed_here() -> bool:
    """Whether moto's LayerVersion gets its physical id from this module (i.e. moto still needs it)."""
    from moto.awslambda.models import LayerVersion

    found = vars(LayerVersion).get("physical_resource_id")
    return isinstance(found, property) and found.fget is _layer_version_arn
