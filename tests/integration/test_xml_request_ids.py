"""The local cloud's response enrichment: pinned to moto's source, and answering what moto's own
``BaseResponse._enrich_response`` answers (the same headers, the same body, the same request id drawn)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentbus_local import hot_paths, xml_request_ids


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert xml_request_ids.PINS.changed() == [], (
        f"moto changed code the local cloud replaces (found on {xml_request_ids.PINS.found_on}): compare "
        "the replacement with moto's new code, then update its digest"
    )


_TEXT = st.text(alphabet=st.sampled_from(list('ab{}":,<>/RequestId\n')), max_size=80)
_BODIES = st.one_of(
    _TEXT,
    st.builds(lambda a, b, c: f"{a}<RequestId>{b}</RequestId>{c}", _TEXT, _TEXT, _TEXT),
    _TEXT.map(str.encode),
    st.none(),
)
_HEADERS = st.dictionaries(
    st.sampled_from(["status", "content-type", "x-amz-crc32"]), st.one_of(st.integers(100, 599), _TEXT)
)


def _enriched(enrich: Any, headers: dict[str, Any], body: Any, seed: int) -> tuple[dict[str, Any], Any]:
    from moto.moto_api._internal import mock_random

    mock_random.seed(seed)
    return enrich(dict(headers), body)  # type: ignore[no-any-return]


@pytest.mark.usefixtures("hot_paths_applied")
@given(headers=_HEADERS, body=_BODIES, seed=st.integers(0, 2**32))
def test_each_response_is_enriched_as_moto_s_own_enriches_it(
    headers: dict[str, Any], body: Any, seed: int
) -> None:
    from moto.core.responses import BaseResponse

    moto_s = xml_request_ids.PINS.moto_original("BaseResponse._enrich_response")

    assert _enriched(BaseResponse._enrich_response, headers, body, seed) == _enriched(
        moto_s, headers, body, seed
    )


def test_a_json_body_is_not_scanned_for_an_xml_request_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails when the replacement is not installed or hands a body without the tag to moto's rewrite."""
    hot_paths.apply()
    import re

    from moto.core import responses

    scanned: list[str] = []
    moto_sub = re.sub

    def counted(pattern: Any, replacement: Any, text: Any, *args: Any) -> Any:
        scanned.append(text)
        return moto_sub(pattern, replacement, text, *args)

    monkeypatch.setattr(re, "sub", counted)
    status: dict[str, Any] = {"status": 200}
    headers, body = responses.BaseResponse._enrich_response(status, '{"Items": []}')
    assert (headers["status"], body, len(headers["x-amzn-requestid"])) == ("200", '{"Items": []}', 52)
    assert scanned == []
    xml = "<Response><RequestId>x</RequestId></Response>"
    _, rewritten = responses.BaseResponse._enrich_response({}, xml)
    assert scanned == [xml]
    assert rewritten != xml
