"""The local cloud's caches of moto's hot paths: installed once, every importer sees the same cached
function, and answers are unchanged."""

from __future__ import annotations

from typing import Any

import jsonpath_ng.ext
import moto.core.responses
import moto.core.utils
import moto.sqs.models

from intentbus_local import hot_paths


def held(module: object, name: str) -> Any:
    """What ``module`` holds under ``name`` (these names are imported, not exported, by their modules)."""
    return vars(module)[name]


def test_each_hot_path_is_memoized_once_for_every_module_that_imported_it() -> None:
    hot_paths.apply()
    parse = held(jsonpath_ng.ext, "parse")
    camel = moto.core.utils.camelcase_to_underscores
    hot_paths.apply()

    assert held(jsonpath_ng.ext, "parse") is parse
    assert hasattr(parse, "cache_info")
    assert held(moto.core.responses, "camelcase_to_underscores") is camel
    assert held(moto.sqs.models, "camelcase_to_underscores") is camel
    assert held(moto.core.responses, "method_names_from_class") is moto.core.utils.method_names_from_class


def test_a_cached_answer_is_the_same_answer() -> None:
    hot_paths.apply()
    expression = held(jsonpath_ng.ext, "parse")("$.detail.payload.amount")

    assert held(jsonpath_ng.ext, "parse")("$.detail.payload.amount") is expression
    found = [match.value for match in expression.find({"detail": {"payload": {"amount": 3}}})]
    assert found == [3]
    assert moto.core.utils.camelcase_to_underscores("ReceiveMessage") == "receive_message"
