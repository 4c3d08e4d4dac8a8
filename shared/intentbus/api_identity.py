"""Who calls the approvals API, as API Gateway's authorizer established it, and for which tenant.

People come through the Cognito authorizer: the token's immutable ``sub`` is their id, its immutable
``custom:tenant_id`` their tenant, and they decide only as members of the ``approvers`` group. Programs
come through IAM on the ``/programs`` routes: their ARN is their id, and the tenant in the path is the
one the exported ABAC policy (``ProgramApproverPolicy``) lets them call. The request body never names
anyone.

The tenant is checked first, before anything is read: a caller of another tenant is told nothing
exists (404, no body), so ids cannot be probed; a caller of the tenant who is not an approver gets 403.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from intentbus.approvals import Approver
from intentbus.errors import IntentbusError

APPROVERS_GROUP = "approvers"
TENANT_CLAIM = "custom:tenant_id"


class Refused(IntentbusError):
    """The caller may not act for the tenant: ``status`` 403 (with the reason) or 404 (with nothing)."""

    code: ClassVar[str] = "refused"

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def groups(claim: object) -> frozenset[str]:
    """``cognito:groups`` as API Gateway passes it: one name, ``a,b`` or ``[a b]``."""
    if isinstance(claim, list | tuple):
        return frozenset(str(item) for item in claim)
    return frozenset(name for name in re.split(r"[\s,\[\]]+", str(claim or "")) if name)


def caller(request_context: Any, tenant: str, *, program: bool) -> Approver:
    """The approver acting for ``tenant``, or ``Refused``. ``program``: an IAM (``/programs``) route."""
    if program:
        arn = request_context.identity.user_arn
        if not arn:
            raise Refused(403, "the request is not signed by an IAM principal")
        return Approver(id=str(arn), tenant_id=tenant, via="iam")
    authorizer = request_context.authorizer
    claims: Mapping[str, Any] = (authorizer.raw_event or {}).get("claims") or {} if authorizer else {}
    sub, claimed = claims.get("sub"), claims.get(TENANT_CLAIM)
    if not sub or not claimed:
        missing = "sub" if not sub else TENANT_CLAIM
        raise Refused(403, f"the token has no {missing} claim")
    if claimed != tenant:
        raise Refused(404, "")
    label = claims.get("email")
    if APPROVERS_GROUP not in groups(claims.get("cognito:groups")):
        raise Refused(403, f"{label or sub} is not an approver of tenant {tenant}")
    return Approver(id=str(sub), tenant_id=tenant, via="cognito", label=str(label) if label else None)
