"""AWS principals compared as IAM compares them: an assumed-role session is its role; paths are dropped.

EventBridge and API Gateway name callers in different shapes (a role's ARN in configuration, an STS
session ARN on a request). The approvals desk compares principals, never names, so both reduce to
one canonical form here.
"""

from __future__ import annotations

import re

_ACCOUNT = r"^arn:(?P<partition>[\w-]+):(?P<service>iam|sts)::(?P<account>\d{12}):"
_STS_SESSION = re.compile(_ACCOUNT + r"assumed-role/(?P<role>[^/]+)/.+$")
_IAM = re.compile(_ACCOUNT + r"(?P<kind>role|user)/(?:.*/)?(?P<name>[^/]+)$")


def canonical(arn: str) -> str:
    """``arn:aws:iam::ACCOUNT:role/NAME`` for a role or any of its sessions, ``...:user/NAME`` for a
    user; anything else as given. Lower-cased: IAM names are unique regardless of case."""
    text = arn.strip()
    session = _STS_SESSION.match(text)
    if session:
        return f"arn:{session['partition']}:iam::{session['account']}:role/{session['role']}".lower()
    named = _IAM.match(text)
    if named:
        return f"arn:{named['partition']}:iam::{named['account']}:{named['kind']}/{named['name']}".lower()
    return text.lower()


def parse_roles(text: str) -> dict[str, str]:
    """``stage=ARN,stage=ARN`` (the ``INTENTBUS_PIPELINE_ROLES`` variable) -> stage -> canonical ARN."""
    roles: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        stage, equals, arn = item.partition("=")
        if equals and stage.strip() and arn.strip():
            roles[stage.strip()] = canonical(arn)
    return roles
