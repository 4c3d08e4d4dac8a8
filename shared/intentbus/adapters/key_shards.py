"""Index partition keys spread over a fixed number of shards, so no one key takes every write.

A DynamoDB partition takes at most 1,000 write units a second, an index's included: an index key that
every run (or every approval of the deployment) writes caps the whole deployment at that. The shard
is a hash of the item's own id, so writing needs no coordination and a reader queries every shard.
The counts are part of the stored format: changing one hides what the old count wrote.
"""

from __future__ import annotations

import hashlib

RUN_LIST_SHARDS = 8
"""Shards of a tenant's run listing (``gsi3``)."""
DUE_APPROVAL_SHARDS = 8
"""Shards of the expiry sweep's index (``gsi2``), across every tenant."""


def shard_of(item_id: str, shards: int) -> int:
    return int.from_bytes(hashlib.sha256(item_id.encode()).digest()[:4], "big") % shards
