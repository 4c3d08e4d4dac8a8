"""The harness's shortcuts change no answer: sessions share what they read, never their clients."""

from __future__ import annotations

import string

import botocore.session

from intentbus_faults.speedups import moto_fast_paths
from intentbus_local.service_models import shared_service_models


def test_new_sessions_share_the_loaded_models_but_each_builds_its_own_client() -> None:
    with shared_service_models():
        first, second = botocore.session.get_session(), botocore.session.get_session()
        model = first.get_component("data_loader").load_service_model("dynamodb", "service-2")
        again = second.get_component("data_loader").load_service_model("dynamodb", "service-2")
        clients = [
            session.create_client(
                "dynamodb", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
            )
            for session in (first, second)
        ]
    assert again is model, "the second session read the same JSON again"
    assert clients[0] is not clients[1]
    assert clients[0].meta.service_model.operation_names == clients[1].meta.service_model.operation_names


def test_mocked_ids_keep_their_length_and_alphabet() -> None:
    from moto.moto_api._internal import mock_random
    from moto.sqs import models

    with moto_fast_paths():
        request_id = mock_random.get_random_string(length=52)
        lower = mock_random.get_random_string(length=12, include_digits=False, lower_case=True)
        handle = vars(models)["generate_receipt_handle"]()  # what moto.sqs.models calls
    assert len(request_id) == 52
    assert set(request_id) <= set(string.ascii_letters + string.digits)
    assert len(lower) == 12
    assert set(lower) <= set(string.ascii_lowercase)
    assert len(handle) == 185
    assert set(handle) <= set(string.ascii_lowercase)
    assert len({mock_random.get_random_string(length=52) for _ in range(50)}) == 50
