"""KMS keys' and Cognito user pools' private keys made on first read: pinned to moto's source, and the
keys read are the ones moto's own code makes (a pool's web key, a replica's key, a signature that
verifies), while a local cloud's start makes none of them."""

from __future__ import annotations

from collections.abc import Iterator
from copy import copy
from typing import Any

import boto3
import pytest
from moto import mock_aws

from intentbus_local import deferred_keys, hot_paths
from intentbus_local.pinning import Pins


@pytest.fixture
def aws() -> Iterator[None]:
    hot_paths.apply()
    with mock_aws():
        yield


def _kms_key(key_id: str) -> Any:
    from moto.kms.models import kms_backends

    return kms_backends["123456789012"]["us-east-1"].keys[key_id]


def test_moto_s_replaced_code_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert deferred_keys.PINS.changed() == [], (
        f"moto changed code the local cloud defers (found on {deferred_keys.PINS.found_on}): compare "
        "with moto's new code, then update its digest"
    )


def test_a_symmetric_key_makes_its_private_key_on_first_read_and_keeps_it(aws: None) -> None:
    from moto.kms.utils import RSAPrivateKey

    kms = boto3.client("kms", region_name="us-east-1")
    key_id = kms.create_key(Description="symmetric")["KeyMetadata"]["KeyId"]
    key = _kms_key(key_id)

    assert isinstance(vars(key)["private_key"], deferred_keys.Pending)
    made = key.private_key
    assert isinstance(made, RSAPrivateKey)
    assert made.key_size == 2048
    assert key.private_key is made
    assert vars(key)["private_key"] is made


def test_a_replica_reads_its_primary_s_key(aws: None) -> None:
    kms = boto3.client("kms", region_name="us-east-1")
    key_id = kms.create_key(MultiRegion=True)["KeyMetadata"]["KeyId"]
    primary = _kms_key(key_id)
    replica = copy(primary)  # as KmsBackend.replicate_key copies it

    assert replica.private_key is primary.private_key


@pytest.mark.parametrize("spec", ["RSA_2048", "RSA_3072"])
def test_an_asymmetric_key_signs_and_verifies_with_the_key_it_reads(aws: None, spec: str) -> None:
    kms = boto3.client("kms", region_name="us-east-1")
    key_id = kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec=spec)["KeyMetadata"]["KeyId"]
    signed = kms.sign(KeyId=key_id, Message=b"m", SigningAlgorithm="RSASSA_PSS_SHA_256")["Signature"]

    assert kms.verify(KeyId=key_id, Message=b"m", Signature=signed, SigningAlgorithm="RSASSA_PSS_SHA_256")[
        "SignatureValid"
    ]
    assert _kms_key(key_id).private_key.key_size == int(spec.split("_")[1])
    public = kms.get_public_key(KeyId=key_id)["PublicKey"]
    assert public == _kms_key(key_id).private_key.public_key()


def test_an_ecc_key_is_made_at_once_as_moto_makes_it(aws: None) -> None:
    from moto.kms.utils import ECDSAPrivateKey

    kms = boto3.client("kms", region_name="us-east-1")
    key_id = kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec="ECC_NIST_P256")["KeyMetadata"]["KeyId"]

    assert isinstance(vars(_kms_key(key_id))["private_key"], ECDSAPrivateKey)


def test_a_user_pool_reads_the_web_key_moto_imports(aws: None) -> None:
    from joserfc import jwk
    from moto.cognitoidp.models import cognitoidp_backends
    from moto.utilities.utils import load_resource

    pool_id = boto3.client("cognito-idp", region_name="us-east-1").create_user_pool(PoolName="p")["UserPool"][
        "Id"
    ]
    pool = cognitoidp_backends["123456789012"]["us-east-1"].user_pools[pool_id]

    assert isinstance(vars(pool)["json_web_key"], deferred_keys.Pending)
    expected = jwk.RSAKey.import_key(load_resource("cognitoidp/resources/jwks-private.json"))
    assert pool.json_web_key.as_dict(private=True) == expected.as_dict(private=True)


def test_a_value_assigned_later_replaces_the_pending_one_and_a_missing_one_is_an_attribute_error() -> None:
    class Holder:
        key = deferred_keys.MadeOnRead("key")

    holder = Holder()
    assert not hasattr(holder, "key")
    made: list[int] = []
    holder.key = deferred_keys.Pending(lambda: made.append(1) or "made")  # type: ignore[func-returns-value]
    holder.key = "assigned"
    assert holder.key == "assigned"
    assert made == []
    del holder.key
    with pytest.raises(AttributeError):
        del holder.key


def test_nothing_is_deferred_on_a_moto_whose_code_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.kms import models as kms

    pins = deferred_keys.PINS
    moved = Pins(found_on=pins.found_on, sources=dict.fromkeys(pins.sources, "0" * 16))
    monkeypatch.setattr(deferred_keys, "PINS", moved)
    monkeypatch.setattr(deferred_keys, "_applied", [])
    moto_s = vars(kms)["generate_private_key"]
    monkeypatch.setattr(kms, "generate_private_key", moto_s)

    with pytest.warns(RuntimeWarning, match=r"Key\.__init__.*the library's own code is used instead"):
        deferred_keys.apply()

    assert vars(kms)["generate_private_key"] is moto_s
    assert deferred_keys._applied == []
