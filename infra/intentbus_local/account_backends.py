"""moto's per-account backend found without walking every backend dict of the process.

On moto 5.2.6 every request and every EventBridge delivery looks its backend up as
``dynamodb_backends[account_id][region]``; ``BackendDict.__getitem__`` first calls
``_create_account_specific_backend``, which takes the backends' lock, lists the dict's keys to see
whether the account has a backend yet, and asks ``self not in BackendDict._instances``: a walk of the
list of every backend dict in use, comparing each with ``BackendDict.__eq__`` (which calls the dict's
``__len__`` and ``isinstance``). About 40,000 lookups in 40 fault schedules, 2% of their CPU.

When the account already has its backend and this very dict is in ``_instances`` (by identity), moto's
code does nothing but return ``dict.__getitem__(self, account_id)``, so the replacement returns that
directly. Every other lookup (a new account, a dict not listed yet, a key that is not a plain ``str``, a
subclass with its own ``_create_account_specific_backend``) goes through moto's own ``__getitem__``.
"""

from __future__ import annotations

from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.core.base_backend.BackendDict.__getitem__": "16766ef9c002fbc6",
        "moto.core.base_backend.BackendDict._create_account_specific_backend": "efcc193ee3ca3337",
        # why a dict found by identity is one moto finds "in" the list: equality is by ``_id`` alone
        "moto.core.base_backend.BackendDict.__eq__": "41e314cf9ea38d65",
    },
)


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if not PINS.holds():
        return
    from moto.core.base_backend import BackendDict

    if "BackendDict.__getitem__" not in PINS.replaced:
        PINS.replace(BackendDict, "__getitem__", _getitem_for(BackendDict))


def _getitem_for(backend_dict: Any) -> Any:
    original = vars(backend_dict)["__getitem__"]
    create = vars(backend_dict)["_create_account_specific_backend"]
    contains = dict.__contains__
    get = dict.__getitem__

    def __getitem__(self: Any, account_id: str) -> Any:
        if (
            type(account_id) is str
            and contains(self, account_id)
            and type(self)._create_account_specific_backend is create
            and any(listed is self for listed in backend_dict._instances)
        ):
            return get(self, account_id)
        return original(self, account_id)

    return __getitem__
