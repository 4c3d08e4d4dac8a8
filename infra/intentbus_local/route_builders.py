"""werkzeug's URL builders compiled when a rule first builds a URL, not when it is bound to a map.

moto routes a REST service's requests (S3, Lambda, CloudFormation and others the local cloud's start
calls over moto's own routing) through a werkzeug ``Map`` of every operation's rule, made on the
service's first request. werkzeug 3.1.9's ``Rule.compile`` makes, besides the rule's matcher, two URL
builders (``_build``, ``_build_unknown``: Python source generated and passed to ``compile``) for
``MapAdapter.build``, which moto's routing never calls: about 100 rules, 25 ms of the fault harness's
serial start. Here ``Rule._compile_builder`` hands ``compile`` a stand-in that, on its first call,
compiles the builder werkzeug would have compiled (``_compile_builder`` of the same rule, reading the
same trace, converters and defaults, which ``compile`` set and nothing changes after), puts it in the
stand-in's place and returns its answer. Pinned to werkzeug's ``Rule.compile`` (which only binds the
two builders) and ``Rule._compile_builder``; on a werkzeug whose code moved nothing is replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="werkzeug 3.1.9",
    sources={
        "werkzeug.routing.rules.Rule.compile": "96edc39424f37ba3",
        "werkzeug.routing.rules.Rule._compile_builder": "a0ec55cf067ff5d5",
    },
)
_BOUND_AS = {False: "_build", True: "_build_unknown"}
"""The attribute ``Rule.compile`` binds each builder to, by ``append_unknown``."""


def apply() -> None:
    """Idempotent; nothing is replaced on a werkzeug whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from werkzeug.routing.rules import Rule

    PINS.replace(Rule, "_compile_builder", _compiled_on_first_call)


def _compiled_on_first_call(rule: Any, append_unknown: bool = True) -> Callable[..., tuple[str, str]]:
    compile_builder = PINS.moto_original("Rule._compile_builder")

    def build(bound: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
        builder: Callable[..., tuple[str, str]] = compile_builder(bound, append_unknown).__get__(bound, None)
        setattr(bound, _BOUND_AS[append_unknown], builder)
        return builder(*args, **kwargs)

    return build
