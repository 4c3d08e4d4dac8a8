"""Deterministic identifiers: canonical JSON, idempotency keys and derived event ids."""

from __future__ import annotations

import hashlib
import json
import uuid
from bisect import bisect_left
from collections.abc import Callable
from functools import lru_cache
from json.encoder import (  # type: ignore[attr-defined]
    c_make_encoder,
    encode_basestring,
    encode_basestring_ascii,
)
from typing import Any

# Namespace for every id intentbus derives; fixed forever so that replays derive the same ids.
INTENTBUS_NAMESPACE = uuid.UUID("6f1d2c3a-8e4b-5a7f-9c0d-1e2f3a4b5c6d")


def canonical_json(value: Any) -> str:
    """JSON with sorted keys at every depth and no insignificant whitespace."""
    return _CANONICAL(value)


def compact_json(value: Any) -> str:
    """JSON with no insignificant whitespace, keys in their own order (how sizes are measured)."""
    return _COMPACT(value)


def encoder_made_once(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode``, its C encoder made once: ``encode`` (and ``json.dumps`` with options) makes one
    per call, which costs more than encoding a small value. The same text; without the circular-reference
    check (its markers are per call), so a value that contains itself fails as ``RecursionError``."""
    if c_make_encoder is None or encoder.indent is not None:  # no C accelerator, or indented output
        return encoder.encode
    escape = encode_basestring_ascii if encoder.ensure_ascii else encode_basestring
    encode = c_make_encoder(
        None,
        encoder.default,
        escape,
        None,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )
    return lambda value: "".join(encode(value, 0))


def _encoder(*, sort_keys: bool) -> Callable[[Any], str]:
    """``json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, default=str)``."""
    return encoder_made_once(
        json.JSONEncoder(sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, default=str)
    )


_CANONICAL = _encoder(sort_keys=True)
_COMPACT = _encoder(sort_keys=False)


def canonical_json_less(content: dict[str, Any], left_out: frozenset[str]) -> tuple[str, str]:
    """``canonical_json(content)`` and the same less the keys ``left_out``, encoding the bulk once.

    The whole is encoded once; the keys sorted from the first key left out on (a few, for an envelope
    less its trace context) are encoded again with and without the keys left out, and that tail of the
    whole is swapped for the shorter one. No loop over every key in Python: that cost more than an encode."""
    if left_out.isdisjoint(content):
        text = canonical_json(content)
        return text, text
    names = sorted(content)  # the order ``sort_keys`` encodes them in
    start = bisect_left(names, min(left_out.intersection(content)))
    tail = {name: content[name] for name in names[start:]}
    whole, tail_text = canonical_json(content), canonical_json(tail)
    kept = canonical_json({name: value for name, value in tail.items() if name not in left_out})
    # ``whole`` is "{" + head + ("," if head) + tail_text[1:]; head is what precedes the tail's pairs.
    prefix = whole[: len(whole) - len(tail_text) + 1]
    if kept == "{}":
        return whole, (prefix[:-1] if start else prefix) + "}"
    return whole, prefix + kept[1:]


def idempotency_key(run_id: str, step_index: int, payload: Any) -> str:
    """The seed formula: sha256 of ``run_id:step_index:<canonical payload>``."""
    digest = hashlib.sha256(f"{run_id}:{step_index}:{canonical_json(payload)}".encode()).hexdigest()
    return f"idem_{digest}"


def derive_id(*parts: object) -> str:
    """uuid5 over the parts, e.g. ``derive_id(input_id, "decide")`` for a stage's output."""
    return _uuid5(":".join(map(str, parts)))


@lru_cache(maxsize=512)
def _uuid5(name: str) -> str:
    # a record derives the same ids more than once (its identity, its outputs' ids)
    return uuid5_text(name)


_NAMESPACE_BYTES = INTENTBUS_NAMESPACE.bytes


def uuid5_text(name: str) -> str:
    """``str(uuid.uuid5(INTENTBUS_NAMESPACE, name))`` without building a ``UUID`` (less than half the work):
    SHA-1 of the namespace and the name, its first 16 bytes in the 8-4-4-4-12 hex form with the version
    (5) and RFC 4122 variant bits set. The version is the 13th hex digit, the variant the top two bits of
    the 17th: both are set on the hex text itself (a bytearray's edits cost ~2.5 k instructions more). A
    name that is not UTF-8 (a lone surrogate) raises as ``uuid5`` does."""
    text = hashlib.sha1(_NAMESPACE_BYTES + name.encode()).hexdigest()
    return f"{text[:8]}-{text[8:12]}-5{text[13:16]}-{_VARIANT[text[16]]}{text[17:20]}-{text[20:32]}"


_VARIANT = {digit: "89ab"[int(digit, 16) & 0x3] for digit in "0123456789abcdef"}
"""A hex digit with its top two bits set to RFC 4122's variant (``10``)."""


def digest(value: Any) -> str:
    """sha256 of the canonical JSON: what a stage records of a fact, so a later stage can compare."""
    return text_digest(canonical_json(value))


def text_digest(text: str) -> str:
    """sha256 of a canonical JSON text (``digest`` of what it encodes)."""
    return hashlib.sha256(text.encode()).hexdigest()


def input_identity(tenant_id: str, source: str, event_id: str) -> str:
    """An input's identity: its tenant, its source and its id (CloudEvents' identity is source + id).

    Dedup, the derived ``run_id`` and every id the pipeline derives for the input follow it, so two
    tenants (or two sources) sending the same id are two inputs.
    """
    return derive_id("input", tenant_id, source, event_id)


KEY_PART_MAX_BYTES = 512
"""Every id of up to 128 characters (the bound before ids could be longer) is kept as it is."""
HASHED = "sha256:"


def key_part(value: str) -> str:
    """``value`` as part of a DynamoDB key: itself while short, else ``sha256:<hex digest>``.

    A key then stays far inside DynamoDB's limits (a sort key holds at most 1,024 bytes) whatever an
    input's id is. A short value that already starts with ``sha256:`` is hashed too, so a value kept as
    it is never equals another's digest.
    """
    encoded = value.encode("utf-8", "surrogatepass")
    if len(encoded) <= KEY_PART_MAX_BYTES and not value.startswith(HASHED):
        return value
    return HASHED + hashlib.sha256(encoded).hexdigest()


def content_id(content: Any) -> str:
    """An id for an inbound event that came without one: the same content gives the same id."""
    return derive_id("content", canonical_json(content))


def approval_id(command_id: str, salt: str) -> str:
    """A command's approval: derived from the command (a redelivery derives it again) and the deployment's
    salt, so knowing a command's inputs is not knowing its approval's id in another deployment."""
    return derive_id(command_id, "approval", *((salt,) if salt else ()))
