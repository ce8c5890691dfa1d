"""The `Key` header against the shared vectors, and the emulator's verdict on it."""

from __future__ import annotations

import re
import sys
from types import FrameType
from typing import Any

import pytest
import requests

from fleet.api.errors import NotAuthorized, error_for_response
from fleet.api.signing import signature
from tests.api.conftest import (
    DEMO_PASSWORD,
    DEMO_SECRET,
    DEMO_TOKEN,
    DEMO_USER,
    MakeClient,
    hmac_vectors,
)
from tests.conftest import Emulator

VECTORS = hmac_vectors()


def test_vectors_file_has_vectors() -> None:
    assert len(VECTORS) >= 2


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["access_token"])
def test_it_computes_the_vector_key_header(vector: dict[str, Any]) -> None:
    key = signature(access_token=vector["access_token"], secret_key=vector["secret_key"])
    assert key == vector["key_header"]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["access_token"])
def test_signature_is_lowercase_hex_of_sha256_length(vector: dict[str, Any]) -> None:
    key = signature(access_token=vector["access_token"], secret_key=vector["secret_key"])
    assert re.fullmatch(r"[0-9a-f]{64}", key)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["access_token"])
def test_signature_differs_from_every_rejected_variant(vector: dict[str, Any]) -> None:
    key = signature(access_token=vector["access_token"], secret_key=vector["secret_key"])
    assert vector["reject"]
    for variant in vector["reject"].values():
        assert key != variant


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["access_token"])
def test_swapping_key_and_message_gives_the_rejected_value(vector: dict[str, Any]) -> None:
    swapped = signature(access_token=vector["secret_key"], secret_key=vector["access_token"])
    assert swapped == vector["reject"]["key_and_message_swapped"]


def test_stray_newline_in_the_token_changes_the_signature() -> None:
    clean = signature(access_token=DEMO_TOKEN, secret_key=DEMO_SECRET)
    assert signature(access_token=DEMO_TOKEN + "\n", secret_key=DEMO_SECRET) != clean
    assert signature(access_token=DEMO_TOKEN, secret_key=DEMO_SECRET + " ") != clean


def _raw_list_cars(emulator: Emulator, key: str) -> requests.Response:
    return requests.get(
        f"{emulator.url}/key/list-cars",
        headers={
            "Authorization": f"Basic {DEMO_TOKEN}",
            "Key": key,
            "cache-control": "no-cache",
        },
        timeout=5,
    )


def test_the_emulator_accepts_the_vector_signature(emulator: Emulator) -> None:
    demo = next(v for v in VECTORS if v["access_token"] == DEMO_TOKEN)
    response = _raw_list_cars(emulator, demo["key_header"])
    assert response.status_code == 200


@pytest.mark.parametrize("variant", ["base64_of_same_digest", "key_and_message_swapped"])
def test_rejected_signature_variants_are_refused_by_the_emulator(
    emulator: Emulator, variant: str
) -> None:
    demo = next(v for v in VECTORS if v["access_token"] == DEMO_TOKEN)
    response = _raw_list_cars(emulator, demo["reject"][variant])
    error = error_for_response(
        status=response.status_code,
        body=response.json(),
        headers=response.headers,
        route="/key/list-cars",
        method="GET",
    )
    assert isinstance(error, NotAuthorized)


def test_base64_signature_is_rejected(emulator: Emulator) -> None:
    demo = next(v for v in VECTORS if v["access_token"] == DEMO_TOKEN)
    response = _raw_list_cars(emulator, demo["reject"]["base64_of_same_digest"])
    assert response.status_code == 401
    assert response.json()["code"] == "fbk_001"


def test_uppercase_hex_signature_is_rejected(emulator: Emulator) -> None:
    response = _raw_list_cars(
        emulator, signature(access_token=DEMO_TOKEN, secret_key=DEMO_SECRET).upper()
    )
    assert response.status_code == 401


def test_the_signature_is_computed_once_per_credential_pair_not_per_request(
    make_client: MakeClient,
) -> None:
    # Spec 5.3, rule 4: constant while the pair exists. Counted with the
    # interpreter's own profiler: every call of `signature`, wherever it comes from.
    computed: list[str] = []

    def count(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is signature.__code__:
            computed.append(frame.f_locals["access_token"])

    sys.setprofile(count)
    try:
        client = make_client()
        for _ in range(3):
            client.list_vehicle_columns()
        client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    finally:
        sys.setprofile(None)

    assert computed == [DEMO_TOKEN]
