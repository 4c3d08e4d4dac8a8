"""moto's KMS keys' RSA private keys and Cognito user pools' JSON web keys made when first read.

On moto 5.2.6 ``kms.models.Key.__init__`` generates an RSA private key for every key it creates, a
symmetric one too (``generate_private_key``: a 2048-bit key for any spec neither RSA nor ECC), and
``cognitoidp.models.CognitoIdpUserPool.__init__`` imports the JSON web key of moto's packaged
``jwks-private.json`` for every pool (``jwk.RSAKey.import_key``, which recovers the key's primes). The
template's two KMS keys and one user pool cost a local cloud's start 0.25 s of CPU that way, before
any schedule or test ran; the pipeline signs nothing with them.

Here ``__init__`` stores what moto's call would make as a ``Pending`` call of that function with the
same arguments, and the attribute (``Key.private_key``, ``CognitoIdpUserPool.json_web_key``) makes it
on first read: a random key at random, the pool's key from the same file. A key moto's
``replicate_key`` copies (a shallow copy) shares its one ``Pending``, so primary and replica read the
same key, as they do on moto. A value assigned later replaces it. ECC keys are made at once, as moto
makes them (its spec check raises there). Pinned to moto's source; on a moto whose code moved nothing
is replaced.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from intentbus_local.pinning import Pins

PINS = Pins(
    found_on="5.2.6",
    sources={
        "moto.kms.models.Key.__init__": "39d3eaacb7bac0cf",
        "moto.kms.models.KmsBackend.replicate_key": "e71e5a684872a4ea",
        "moto.kms.utils.generate_private_key": "cdf2b67aac1401be",
        "moto.cognitoidp.models.CognitoIdpUserPool.__init__": "1c8d864a15c3f0dd",
    },
)


_applied: list[bool] = []


class Pending:
    """A value made by ``make()`` on first use, then kept (every holder of it reads the same value)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make: Callable[[], Any] | None = make
        self._value: Any = None

    def value(self) -> Any:
        if self._make is not None:
            self._value = self._make()
            self._make = None
        return self._value


class MadeOnRead:
    """An instance attribute whose stored ``Pending`` is made (and stored in its place) on first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        try:
            stored = vars(instance)[self._name]
        except KeyError:
            raise AttributeError(self._name) from None
        if isinstance(stored, Pending):
            stored = vars(instance)[self._name] = stored.value()
        return stored

    def __set__(self, instance: object, value: Any) -> None:
        vars(instance)[self._name] = value

    def __delete__(self, instance: object) -> None:
        try:
            del vars(instance)[self._name]
        except KeyError:
            raise AttributeError(self._name) from None


class _RsaKeyImports:
    """``RSAKey.import_key`` as moto's Cognito models call it, answered with a ``Pending`` import."""

    def __init__(self, rsa_key: Any) -> None:
        self._rsa_key = rsa_key

    def import_key(self, *args: Any, **kwargs: Any) -> Pending:
        return Pending(functools.partial(self._rsa_key.import_key, *args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rsa_key, name)


class _JwkDeferringRsaImports:
    """Stands for ``joserfc.jwk`` in ``moto.cognitoidp.models``: its ``RSAKey.import_key`` is deferred,
    everything else is joserfc's."""

    def __init__(self, jwk: Any) -> None:
        self._jwk = jwk
        self.RSAKey = _RsaKeyImports(jwk.RSAKey)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jwk, name)


def apply() -> None:
    """Idempotent; nothing is replaced on a moto whose code moved (``Pins.holds``)."""
    if _applied or not PINS.holds():
        return
    from moto.cognitoidp import models as cognito
    from moto.kms import models as kms
    from moto.kms.utils import KeySpec

    original = vars(kms)["generate_private_key"]
    ecc = frozenset(KeySpec.ecc_key_specs())

    def generate_private_key(key_spec: str) -> Any:
        if key_spec in ecc:
            return original(key_spec)
        return Pending(functools.partial(original, key_spec))

    _applied.append(True)
    setattr(kms.Key, "private_key", MadeOnRead("private_key"))  # noqa: B010
    setattr(kms, "generate_private_key", generate_private_key)  # noqa: B010
    setattr(cognito.CognitoIdpUserPool, "json_web_key", MadeOnRead("json_web_key"))  # noqa: B010
    setattr(cognito, "jwk", _JwkDeferringRsaImports(vars(cognito)["jwk"]))  # noqa: B010
