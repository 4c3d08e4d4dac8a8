"""moto's response enrichment without its XML request-id rewrite on a body that has no request id.

On moto 5.2.6 every response goes through ``BaseResponse._enrich_response``, which draws the request id
into the headers and then rewrites the body's ``<RequestId>...</RequestId>`` with
``re.sub(r"(?<=<RequestId>).*(?=<\\/RequestId>)", ...)``: the look-behind is tried at every position of
the body, about 20 microseconds a kilobyte, and a JSON body (DynamoDB, SQS, EventBridge: every answer the
pipeline reads) never has the tag. A body that is a text without ``<RequestId>`` cannot match, so the
rewrite returns it unchanged; the replacement does what moto's code does before the rewrite (the status
as a text, the request id drawn into the headers as ``gen_amzn_requestid_long`` draws it) and skips the
rewrite only then. Every other body (one with the tag, or not a text) goes through moto's own code.
Pinned by tests/integration/test_xml_request_ids.py.
"""

from __future__ import annotations

from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.core.responses.BaseResponse._enrich_response": "86cd4a4051dd20e8",
    },
)
_TAG = "<RequestId>"


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.core.responses import BaseResponse

    if "BaseResponse._enrich_response" not in PINS.replaced:
        PINS.replace(BaseResponse, "_enrich_response", staticmethod(_enrich_response))


def _enrich_response(headers: dict[str, Any], body: Any) -> tuple[dict[str, Any], Any]:
    if type(body) is not str or _TAG in body:
        enrich = PINS.moto_original("BaseResponse._enrich_response")
        moto_s: tuple[dict[str, Any], Any] = enrich(headers, body)
        return moto_s
    from moto.core import responses

    if "status" in headers:
        headers["status"] = str(headers["status"])
    vars(responses)["gen_amzn_requestid_long"](headers)  # the name moto's code reads, patched or not
    return headers, body
