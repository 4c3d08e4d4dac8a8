"""The options that point a people's command (``approvals``, ``review``) at a local cloud's stack."""

from __future__ import annotations

from intentbus_local.cloud import LocalCloud


def target_args(cloud: LocalCloud) -> list[str]:
    return [
        "--table",
        cloud.topology.tables["WorkflowTable"],
        "--bus",
        cloud.topology.bus_name,
        "--claim-bucket",
        cloud.topology.functions["ValidateFunction"].environment["INTENTBUS_CLAIM_BUCKET"],
        "--endpoint-url",
        str(cloud.endpoint_url),
    ]
