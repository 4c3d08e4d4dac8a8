"""A new botocore session's built-in handlers copied from one registered per process: pinned to
botocore's source, and each session's handlers the ones botocore's own registration gives (the same
objects, on the same events, in the same order), in an emitter of its own."""

from __future__ import annotations

from typing import Any

import botocore.hooks
import botocore.session
import pytest

from intentbus_local import session_handlers
from intentbus_local.pinning import Pins
from intentbus_local.session_handlers import copied_builtin_handlers

EVENTS = [
    "before-call.dynamodb.PutItem",
    "before-parameter-build.s3.PutObject",
    "needs-retry.sqs.ReceiveMessage",
    "after-call.eventbridge.PutEvents",
    "creating-client-class.s3",
    "choose-signer.cognito-identity.GetId",
    "provide-client-params.lambda.Invoke",
]


def _botocore_own(**kwargs: Any) -> botocore.session.Session:
    """A session made by botocore's own code (its initializers run after the built-in handlers)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session.Session, "_register_builtin_handlers", _original())
        return botocore.session.Session(**kwargs)


def _original() -> Any:
    return session_handlers.PINS.moto_original("Session._register_builtin_handlers")


def _trie(node: dict[str, Any]) -> Any:
    """The trie as plain data: each node's chunk, its handlers by section (by identity), its children."""
    values = node["values"]
    return (
        node["chunk"],
        None if values is None else tuple(tuple(_handler(h) for h in section) for section in values),
        {chunk: _trie(child) for chunk, child in sorted(node["children"].items())},
    )


def _handler(handler: Any) -> Any:
    """A handler by identity; one made per session (Powertools' user-agent closure) by its code and cells."""
    closure = getattr(handler, "__closure__", None)
    if closure is None:
        return id(handler)
    return handler.__code__, tuple(cell.cell_contents for cell in closure)


def _emitter(session: botocore.session.Session) -> Any:
    return session._original_handler  # type: ignore[attr-defined]


def test_the_code_the_copy_stands_in_for_is_the_code_it_was_written_against() -> None:
    assert session_handlers.PINS.changed() == [], (
        f"botocore changed the code the copy stands in for (found on {session_handlers.PINS.found_on}): "
        "compare intentbus_local.session_handlers with it, then update its digest"
    )


def test_a_session_gets_the_handlers_botocore_registers_in_the_same_order() -> None:
    with copied_builtin_handlers():
        assert vars(botocore.session.Session)["_register_builtin_handlers"].copies_builtin_handlers
        copied = botocore.session.Session()
    own = _botocore_own()

    assert _trie(_emitter(copied)._handlers._root) == _trie(_emitter(own)._handlers._root)
    assert _emitter(copied)._unique_id_handlers == _emitter(own)._unique_id_handlers
    for event in EVENTS:
        assert [_handler(h) for h in _emitter(copied)._handlers.prefix_search(event)] == [
            _handler(h) for h in _emitter(own)._handlers.prefix_search(event)
        ]
    assert copied._events._alias_name_cache == own._events._alias_name_cache  # type: ignore[attr-defined]
    assert len(list(_emitter(own)._handlers.prefix_search("before-parameter-build.s3.PutObject"))) > 5


def test_each_session_has_an_emitter_of_its_own() -> None:
    with copied_builtin_handlers():
        first, second = botocore.session.Session(), botocore.session.Session()
    before = _trie(_emitter(second)._handlers._root)

    def extra(**kwargs: Any) -> None:
        return None

    first.register("before-call.dynamodb.PutItem", extra)
    first.register("needs-retry.sqs", extra, unique_id="mine")

    assert extra in list(_emitter(first)._handlers.prefix_search("before-call.dynamodb.PutItem"))
    assert _trie(_emitter(second)._handlers._root) == before
    assert "mine" not in _emitter(second)._unique_id_handlers
    prototype = session_handlers.prototype(_original())
    assert extra not in list(
        prototype._original_handler._handlers.prefix_search("before-call.dynamodb.PutItem")
    )
    assert _emitter(first) is not _emitter(second) is not prototype._original_handler
    assert _emitter(first)._lookup_cache is not _emitter(second)._lookup_cache


def test_a_session_with_hooks_of_its_own_registers_them_as_botocore_does() -> None:
    hooks: Any = botocore.hooks.HierarchicalEmitter()

    def mine(**kwargs: Any) -> None:
        return None

    hooks.register("before-call", mine)
    with copied_builtin_handlers():
        botocore.session.Session(event_hooks=hooks)
    own_hooks: Any = botocore.hooks.HierarchicalEmitter()
    own_hooks.register("before-call", mine)
    own = _botocore_own(event_hooks=own_hooks)

    assert _trie(hooks._handlers._root) == _trie(_emitter(own)._handlers._root)


def test_a_change_to_the_built_in_handlers_makes_a_new_prototype(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore import handlers

    def added(**kwargs: Any) -> None:
        return None

    monkeypatch.setattr(handlers, "BUILTIN_HANDLERS", [*handlers.BUILTIN_HANDLERS, ("before-call.s3", added)])
    with copied_builtin_handlers():
        session = botocore.session.Session()

    assert added in list(_emitter(session)._handlers.prefix_search("before-call.s3.PutObject"))


def test_nothing_is_copied_on_a_botocore_whose_code_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    pins = session_handlers.PINS
    moved = Pins(found_on=pins.found_on, sources=dict.fromkeys(pins.sources, "0" * 16))
    original = _original()
    monkeypatch.setattr(session_handlers, "PINS", moved)
    monkeypatch.setattr(botocore.session.Session, "_register_builtin_handlers", original)

    with pytest.warns(RuntimeWarning, match="_register_builtin_handlers"), copied_builtin_handlers():
        assert vars(botocore.session.Session)["_register_builtin_handlers"] is original
