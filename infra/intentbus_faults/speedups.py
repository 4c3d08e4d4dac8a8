"""Caches and shortcuts for moto's and botocore's hot paths, so thousands of schedules fit in a long run.

Each patch memoizes a function whose answer depends only on its arguments or draws moto's random
identifiers in one call; none changes what moto answers. Requests to the pipeline's services go unsigned
through the in-process cloud itself (``intentbus_local.unsigned``), the one place that skips signing.
Measured on 10 schedules: the per-call cost inside moto drops by about a quarter.

``intentbus_local.service_models.shared_service_models`` (which the in-process local cloud enters) lets
every botocore loader of the process share what it read from botocore's data files: each simulated
Lambda sandbox still builds its own session and clients at its cold start.
"""

from __future__ import annotations

import contextlib
import functools
import random
import string
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def moto_fast_paths() -> Iterator[None]:
    import moto.core.responses
    import moto.core.utils
    import moto.moto_api._internal.moto_random
    import moto.sqs.models

    patches: list[tuple[object, str, Any]] = []

    def patch(owner: object, name: str, replacement: Callable[..., Any]) -> None:
        patches.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)

    camel = functools.lru_cache(maxsize=4096)(moto.core.utils.camelcase_to_underscores)
    for module in (moto.core.utils, moto.core.responses, moto.sqs.models):
        patch(module, "camelcase_to_underscores", camel)
    method_names = functools.lru_cache(maxsize=512)(moto.core.utils.method_names_from_class)
    for module in (moto.core.utils, moto.core.responses):
        patch(module, "method_names_from_class", method_names)
    # Every response's request id (52 characters) and every received message's receipt handle (185)
    # drawn one random.choice per character; random.choices draws them all in one call.
    patch(moto.moto_api._internal.moto_random.MotoRandom, "get_random_string", _random_string)
    patch(moto.sqs.models, "generate_receipt_handle", _receipt_handle)
    try:
        yield
    finally:
        for owner, name, original in reversed(patches):
            setattr(owner, name, original)


def _random_string(
    self: random.Random, length: int = 20, include_digits: bool = True, lower_case: bool = False
) -> str:
    pool = string.ascii_letters + (string.digits if include_digits else "")
    drawn = "".join(self.choices(pool, k=length))
    return drawn.lower() if lower_case else drawn


def _receipt_handle() -> str:
    from moto.moto_api._internal import mock_random

    return "".join(mock_random.choices(string.ascii_lowercase, k=185))
