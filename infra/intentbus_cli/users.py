"""``intentbus users``: the approvals user pool's people. Nobody signs up; an administrator adds each user.

``add`` creates the user with a verified email and the immutable ``custom:tenant_id`` (Cognito mails a
temporary password), and puts them in the ``approvers`` group unless ``--not-approver``: only members of
that group decide, and only for their own tenant. ``list`` shows each user's immutable id (``sub``, the
id approvals record), email, tenant and whether they are an approver.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any, TypeVar

from intentbus.envelope import TENANT_PATTERN
from intentbus.errors import ConfigurationError
from intentbus_cli.failures import UsageError

APPROVERS_GROUP = "approvers"
POOL_LOGICAL_ID = "ApprovalsUserPool"
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,255}$")
_TENANT = re.compile(TENANT_PATTERN)

_P = TypeVar("_P", bound=argparse.ArgumentParser)


def add_parser(commands: argparse._SubParsersAction[_P]) -> None:
    users = commands.add_parser("users", help="the approvals user pool: add and list people")
    users.add_argument("--user-pool-id", help="the pool (the stack's ApprovalsUserPoolId output)")
    users.add_argument(
        "--stack", default=os.environ.get("INTENTBUS_STACK"), help="or the stack to find it in"
    )
    users.add_argument("--endpoint-url", help="another endpoint, e.g. a moto server")
    actions = users.add_subparsers(dest="users_command", required=True, parser_class=type(users))
    add = actions.add_parser("add", help="create a user of one tenant (an approver unless --not-approver)")
    add.add_argument("email")
    add.add_argument("--tenant", required=True, help="the tenant they act for; it can never change")
    add.add_argument("--not-approver", action="store_true", help="may sign in, may not decide")
    actions.add_parser("list", help="every user: sub, email, tenant, approver or not")


def run(args: argparse.Namespace) -> int:
    from intentbus.adapters.clients import AwsClients

    clients = AwsClients(endpoint_url=args.endpoint_url)
    pool = user_pool(args, clients)
    cognito = clients.client("cognito-idp")
    if args.users_command == "add":
        from botocore.exceptions import ClientError

        try:
            sub = add(cognito, pool, email=args.email, tenant=args.tenant, approver=not args.not_approver)
        except ClientError as error:
            raise ConfigurationError(
                f"cannot add {args.email}: {error.response['Error']['Message']}"
            ) from None
        role = "an approver" if not args.not_approver else "not an approver"
        print(f"added {args.email} (sub {sub}) to tenant {args.tenant}, {role}")
        print("Cognito mails them a temporary password; they set their own at first sign-in")
        return 0
    approvers = {
        user["Username"]
        for user in _pages(
            cognito, "list_users_in_group", "Users", GroupName=APPROVERS_GROUP, UserPoolId=pool
        )
    }
    for user in _pages(cognito, "list_users", "Users", UserPoolId=pool):
        attributes = {item["Name"]: item["Value"] for item in user.get("Attributes", [])}
        kind = "approver" if user["Username"] in approvers else "not an approver"
        print(
            f"{attributes.get('sub', '?')}  {attributes.get('email', user['Username'])}  "
            f"tenant {attributes.get('custom:tenant_id', '(none)')}  {kind}  {user.get('UserStatus', '')}"
        )
    return 0


def user_pool(args: argparse.Namespace, clients: Any) -> str:
    if args.user_pool_id:
        return str(args.user_pool_id)
    if not args.stack:
        raise ConfigurationError("pass --user-pool-id or --stack (or set INTENTBUS_STACK)")
    from intentbus_cli.targets import Target

    return Target(args.stack, _clients=clients).physical(POOL_LOGICAL_ID)


def add(cognito: Any, pool: str, *, email: str, tenant: str, approver: bool) -> str:
    """Creates the user (email verified, tenant set once) and adds them to the approvers group."""
    if not _EMAIL.match(email):
        raise UsageError(f"{email!r} is not an email address")
    if not _TENANT.match(tenant):
        raise UsageError(f"{tenant!r} is not a tenant id")
    created = cognito.admin_create_user(
        UserPoolId=pool,
        Username=email,
        UserAttributes=[
            {"Name": "email", "Value": email},
            {"Name": "email_verified", "Value": "true"},
            {"Name": "custom:tenant_id", "Value": tenant},
        ],
        DesiredDeliveryMediums=["EMAIL"],
    )["User"]
    if approver:
        cognito.admin_add_user_to_group(
            UserPoolId=pool, Username=created["Username"], GroupName=APPROVERS_GROUP
        )
    attributes = {item["Name"]: item["Value"] for item in created.get("Attributes", [])}
    return str(attributes.get("sub", created["Username"]))


def _pages(client: Any, operation: str, key: str, **request: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for page in client.get_paginator(operation).paginate(**request):
        found.extend(page.get(key, []))
    return found
