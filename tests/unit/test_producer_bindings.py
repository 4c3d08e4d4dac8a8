"""ProducerBindings: which tenants a (account, source) may send for, from the deployment's configuration."""

from __future__ import annotations

import pytest

from intentbus.errors import ConfigurationError
from intentbus.producers import ProducerBindings

OWN = "123456789012"
OTHER = "111122223333"


def test_a_source_of_the_stacks_account_speaks_only_for_its_tenants() -> None:
    bindings = ProducerBindings.parse(" monitoring.example = acme | globex ; crm.example=acme")
    assert bindings.allows(account=OWN, source="monitoring.example", tenant_id="globex", own_account=OWN)
    assert bindings.allows(account=OWN, source="crm.example", tenant_id="acme", own_account=OWN)
    # Attack: a bound source names a tenant it was not bound to.
    assert not bindings.allows(account=OWN, source="crm.example", tenant_id="globex", own_account=OWN)
    # Attack: the same source name sent from another account.
    assert not bindings.allows(account=OTHER, source="crm.example", tenant_id="acme", own_account=OWN)


def test_a_source_of_another_account_is_bound_with_its_account() -> None:
    bindings = ProducerBindings.parse(f"crm.example@{OTHER}=acme")
    assert bindings.allows(account=OTHER, source="crm.example", tenant_id="acme", own_account=OWN)
    assert not bindings.allows(account=OWN, source="crm.example", tenant_id="acme", own_account=OWN)


def test_an_empty_configuration_binds_nobody() -> None:
    bindings = ProducerBindings.parse("")
    assert not bindings.allows(account=OWN, source="monitoring.example", tenant_id="acme", own_account=OWN)
    assert "ProducerBindings is empty" in bindings.why_not(
        account=OWN, source="monitoring.example", tenant_id="acme"
    )


def test_wildcards_bind_any_tenant_or_any_source() -> None:
    assert ProducerBindings.parse("tests.example=*").allows(
        account=OWN, source="tests.example", tenant_id="anyone", own_account=OWN
    )
    assert ProducerBindings.parse("*=acme").allows(
        account=OWN, source="whatever", tenant_id="acme", own_account=OWN
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("monitoring.example", "expected SOURCE=TENANT"),
        ("monitoring.example=", "no tenant"),
        ("crm.example@12=acme", "not an account id"),
        ("crm.example=not a tenant", "is not a tenant id"),
        ("bad source=acme", "is not a source"),
        ("crm.example=acme by crm-bot", "is not an IAM principal ARN"),
    ],
)
def test_a_malformed_binding_is_a_configuration_error_naming_the_entry(text: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        ProducerBindings.parse(text)


def test_a_binding_may_name_the_principal_that_sends_as_the_source() -> None:
    role = f"arn:aws:iam::{OTHER}:role/crm-producer"
    bindings = ProducerBindings.parse(f"crm.example@{OTHER}=acme|globex by {role}; monitoring.example=acme")
    assert bindings.allows(account=OTHER, source="crm.example", tenant_id="globex", own_account=OWN)
    assert bindings.principal(account=OTHER, source="crm.example", own_account=OWN) == role
    assert bindings.principal(account=OWN, source="crm.example", own_account=OWN) is None
    assert bindings.principal(account=OWN, source="monitoring.example", own_account=OWN) is None
