"""Which tenants each producer may speak for: configuration, never the message.

An EventBridge event carries the account that sent it and the ``source`` the sender chose (which the
producer's IAM policy pins with an ``events:source`` condition), not the sender's principal. So the
binding is (account, source) -> tenants, declared by the deployment (``ProducerBindings``, the
``INTENTBUS_PRODUCERS`` variable)::

    monitoring.example=acme|globex; crm.example@111122223333=acme

``SOURCE=TENANT|TENANT`` binds a source of the stack's own account; ``SOURCE@ACCOUNT=...`` one of another
account. ``... by ARN`` names the principal (role or user) that sends as that source: a command it sends
directly records it as its proposer, and the approvals desk refuses it as that command's approver::

    crm.example=acme by arn:aws:iam::111122223333:role/crm-producer
 ``*`` for the tenants lets the source speak for any tenant, ``*`` for the source binds every
source (both are for tests and local runs, never a deployment). An empty text binds nobody: every
producer input is quarantined until the deployment says who may send what.
"""

from __future__ import annotations

import re
from dataclasses import field

from intentbus.envelope import TENANT_PATTERN
from intentbus.errors import ConfigurationError
from intentbus.frozen import Frozen, fields_repr, frozen_dataclass

ANY = "*"
_ACCOUNT = re.compile(r"^[0-9]{12}$")
_SOURCE = re.compile(r"^[^\s=@;|]{1,256}$")
_TENANT = re.compile(TENANT_PATTERN)
_PRINCIPAL = re.compile(r"^arn:[\w-]+:(iam|sts)::[0-9]{12}:(role|user|assumed-role)/\S+$")


@frozen_dataclass(init=False, repr=False, eq=False)  # never compared; methods by hand (intentbus.frozen)
class ProducerBindings(Frozen):
    """Which tenants each producer may send for, and the principal it sends as (``PRODUCER_BINDINGS``)."""

    bindings: dict[tuple[str | None, str], frozenset[str]] = field(default_factory=dict)
    """(account or ``None`` for the stack's own, source) -> tenants (``*``: any)."""
    principals: dict[tuple[str | None, str], str] = field(default_factory=dict)
    """(account or ``None``, source) -> the principal's ARN that sends as that source."""

    def __init__(
        self,
        bindings: dict[tuple[str | None, str], frozenset[str]] | None = None,
        principals: dict[tuple[str | None, str], str] | None = None,
    ) -> None:
        object.__setattr__(self, "bindings", {} if bindings is None else bindings)
        object.__setattr__(self, "principals", {} if principals is None else principals)

    __repr__ = fields_repr

    @classmethod
    def none(cls) -> ProducerBindings:
        return cls()

    @classmethod
    def parse(cls, text: str) -> ProducerBindings:
        bindings: dict[tuple[str | None, str], frozenset[str]] = {}
        principals: dict[tuple[str | None, str], str] = {}
        for number, item in enumerate((part.strip() for part in text.split(";")), start=1):
            if not item:
                continue
            sender, equals, tenants_text = item.partition("=")
            if not equals:
                raise ConfigurationError(
                    f"ProducerBindings entry {number} {item!r}: expected SOURCE=TENANT|..."
                )
            source, at, account = (part.strip() for part in sender.partition("@"))
            if not _SOURCE.match(source):
                raise ConfigurationError(f"ProducerBindings entry {number}: {source!r} is not a source")
            if at and not _ACCOUNT.match(account):
                raise ConfigurationError(f"ProducerBindings entry {number}: {account!r} is not an account id")
            tenants_text, by, principal = tenants_text.partition(" by ")
            if by and not _PRINCIPAL.match(principal.strip()):
                raise ConfigurationError(
                    f"ProducerBindings entry {number}: {principal.strip()!r} is not an IAM principal ARN"
                )
            tenants = frozenset(t.strip() for t in tenants_text.split("|") if t.strip())
            bad = sorted(t for t in tenants if t != ANY and not _TENANT.match(t))
            if not tenants or bad:
                raise ConfigurationError(
                    f"ProducerBindings entry {number}: {', '.join(bad) or 'no tenant'} is not a tenant id"
                )
            key = (account if at else None, source)
            bindings[key] = bindings.get(key, frozenset()) | tenants
            if by:
                principals[key] = principal.strip()
        return cls(bindings, principals)

    def allows(self, *, account: str, source: str, tenant_id: str, own_account: str | None) -> bool:
        """Whether ``source`` of ``account`` may send for ``tenant_id``. ``own_account`` is the stack's
        account (``None`` where it is not known, as in the in-memory pipeline: any account then)."""
        candidates: list[tuple[str | None, str]] = [(account, source), (account, ANY)]
        if own_account is None or account == own_account:
            candidates += [(None, source), (None, ANY)]
        for key in candidates:
            tenants = self.bindings.get(key, frozenset())
            if tenant_id in tenants or ANY in tenants:
                return True
        return False

    def principal(self, *, account: str, source: str, own_account: str | None) -> str | None:
        """The principal bound to send as ``source`` of ``account``, if the binding names one."""
        keys: list[tuple[str | None, str]] = [(account, source)]
        if own_account is None or account == own_account:
            keys.append((None, source))
        return next((self.principals[key] for key in keys if key in self.principals), None)

    def why_not(self, *, account: str, source: str, tenant_id: str) -> str:
        if not self.bindings:
            return (
                f"no producer is bound (ProducerBindings is empty): source {source!r} of account {account} "
                f"may not send for tenant {tenant_id!r}"
            )
        return (
            f"source {source!r} of account {account} is not bound to tenant {tenant_id!r} (ProducerBindings)"
        )
