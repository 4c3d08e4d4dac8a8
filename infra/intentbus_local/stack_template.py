"""A JSON stack template read as JSON by moto's CloudFormation, not by PyYAML.

moto 5.2.x (``moto/cloudformation/models.py``) reads every template with PyYAML's pure-Python loader
first and falls back to JSON only when that fails. The local cloud deploys the translated template as
JSON (provision.py), and PyYAML took ~0.4 s of a local cloud's start-up (a fifth of the fault runs'
parent) to read it. CloudFormation reads a JSON template as JSON; so does this: a template whose text
is a JSON object is ``json.loads``-ed, anything else goes through moto's own code. For a template that
json.dumps wrote the two readings agree (tests/integration/test_stack_template.py); where they could
differ (YAML 1.1 reads ``1e-05`` as a string), JSON's is CloudFormation's. UPSTREAM.md offers it
to moto.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={"moto.cloudformation.models.Stack.parse_template": "780e8fac6c67e689"},
)


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.cloudformation.models import Stack

    if "Stack.parse_template" not in PINS.replaced:
        original = vars(Stack)["parse_template"].__func__
        PINS.replace(Stack, "parse_template", staticmethod(_parse_template_for(original)))


def _parse_template_for(original: Callable[[str], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    def parse_template(template: str) -> dict[str, Any]:
        if template.lstrip().startswith("{"):
            try:
                parsed = json.loads(template)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                return parsed
        return original(template)

    return parse_template
