"""``intentbus users``: an administrator adds people to the approvals user pool (moto's Cognito)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from intentbus_cli.main import main


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        cognito = boto3.client("cognito-idp", region_name="us-east-1")
        pool_id = cognito.create_user_pool(
            PoolName="approvers",
            UsernameAttributes=["email"],
            AdminCreateUserConfig={"AllowAdminCreateUserOnly": True},
            Schema=[{"Name": "tenant_id", "AttributeDataType": "String", "Mutable": False}],
        )["UserPool"]["Id"]
        cognito.create_group(GroupName="approvers", UserPoolId=pool_id)
        yield cognito, pool_id


def test_add_creates_a_verified_user_of_one_tenant_in_the_approvers_group(
    pool: tuple[Any, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cognito, pool_id = pool
    assert main(["users", "--user-pool-id", pool_id, "add", "ann@acme.example", "--tenant", "acme"]) == 0
    assert (
        main(
            [
                "users",
                "--user-pool-id",
                pool_id,
                "add",
                "bob@acme.example",
                "--tenant",
                "acme",
                "--not-approver",
            ]
        )
        == 0
    )
    user = cognito.admin_get_user(UserPoolId=pool_id, Username="ann@acme.example")
    attributes = {item["Name"]: item["Value"] for item in user["UserAttributes"]}
    assert (attributes["custom:tenant_id"], attributes["email_verified"]) == ("acme", "true")
    members = cognito.list_users_in_group(UserPoolId=pool_id, GroupName="approvers")["Users"]
    assert [m["Username"] for m in members] == [user["Username"]]
    assert main(["users", "--user-pool-id", pool_id, "list"]) == 0
    listed = capsys.readouterr().out
    assert f"{attributes['sub']}  ann@acme.example  tenant acme  approver" in listed
    assert "bob@acme.example  tenant acme  not an approver" in listed


def test_add_refuses_a_bad_tenant_and_a_second_user_of_the_same_email(
    pool: tuple[Any, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, pool_id = pool
    assert main(["users", "--user-pool-id", pool_id, "add", "eve@x.example", "--tenant", "../acme"]) == 2
    assert "is not a tenant id" in capsys.readouterr().err
    assert main(["users", "--user-pool-id", pool_id, "add", "ann@acme.example", "--tenant", "acme"]) == 0
    assert main(["users", "--user-pool-id", pool_id, "add", "ann@acme.example", "--tenant", "globex"]) == 3
    assert "cannot add ann@acme.example" in capsys.readouterr().err
