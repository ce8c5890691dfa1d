"""Rate limiting (spec 7.3.3 and 8: 429 with Retry-After, on all routes)."""

from __future__ import annotations

import pytest
import requests

from tests.conftest import Emulator
from tests.emulator.support import (
    NO_PERMISSION_SECRET,
    NO_PERMISSION_TOKEN,
    V1_ROUTES,
    V2_ERROR,
    V2_ROUTES,
    Api,
    auth_headers,
)


@pytest.mark.parametrize(("method", "path"), V1_ROUTES + V2_ROUTES)
def test_every_route_answers_429_with_retry_after_past_the_quota(
    api: Api, emulator: Emulator, method: str, path: str
) -> None:
    emulator.control("POST", "rate-limit", limit=2, window=30)
    for _ in range(2):
        assert api.call(method, path).status_code != 429

    response = api.call(method, path)

    assert response.status_code == 429
    assert 1 <= int(response.headers["Retry-After"]) <= 30


def test_v1_429_body_is_fbk_429(api: Api, emulator: Emulator) -> None:
    emulator.control("POST", "rate-limit", limit=1, window=60)
    api.get("/key/list-cars")

    body = api.get("/key/list-cars").json()

    assert body == {"error": True, "code": "fbk_429", "message": "Muitas requisições"}


def test_v2_429_body_is_a_too_many_requests_problem(api: Api, emulator: Emulator) -> None:
    emulator.control("POST", "rate-limit", limit=1, window=60)
    api.get("/v2/crlv/vehicles/ABC1234")

    response = api.get("/v2/crlv/vehicles/ABC1234")

    assert response.headers["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == V2_ERROR + "too-many-requests"
    assert body["status"] == 429
    assert body["instance"] == "/v2/crlv/vehicles/ABC1234"


def test_retry_after_counts_down_to_the_end_of_the_window(api: Api, emulator: Emulator) -> None:
    emulator.control("POST", "rate-limit", limit=1, window=60)
    api.get("/key/list-cars")
    emulator.advance(30)

    response = api.get("/key/list-cars")

    assert response.status_code == 429
    # 30 s left, less what the machine took between the calls (the emulator's clock ticks).
    assert 20 <= int(response.headers["Retry-After"]) <= 30


def test_the_quota_comes_back_after_the_window(api: Api, emulator: Emulator) -> None:
    emulator.control("POST", "rate-limit", limit=1, window=60)
    api.get("/key/list-cars")
    assert api.get("/key/list-cars").status_code == 429

    emulator.advance(60)

    assert api.get("/key/list-cars").status_code == 200


def test_the_quota_is_per_access_token(api: Api, emulator: Emulator) -> None:
    emulator.control("POST", "rate-limit", limit=1, window=60)
    api.get("/key/list-cars")
    assert api.get("/key/list-cars").status_code == 429

    other = api.get(
        "/key/list-cars", headers=auth_headers(NO_PERMISSION_TOKEN, NO_PERMISSION_SECRET)
    )

    assert other.status_code == 403  # its own quota, so it gets as far as its permission


def test_the_limit_is_counted_before_authentication(api: Api, emulator: Emulator) -> None:
    emulator.control("POST", "rate-limit", limit=1, window=60)
    bad = auth_headers(Key="wrong")
    assert api.get("/key/list-cars", headers=bad).status_code == 401

    assert api.get("/key/list-cars", headers=bad).status_code == 429


def test_a_limit_of_zero_turns_limiting_off(api: Api, emulator: Emulator) -> None:
    emulator.control("POST", "rate-limit", limit=0, window=60)

    statuses = {api.get("/key/list-cars").status_code for _ in range(20)}

    assert statuses == {200}


def test_the_control_surface_and_downloads_are_not_limited(api: Api, emulator: Emulator) -> None:
    request_id = next(
        request["requestId"]
        for request in emulator.control("GET", "crlv/requests")
        if request["status"] == "completed"
    )
    emulator.control("POST", "rate-limit", limit=1, window=60)
    pdf_url = api.get(f"/v2/crlv/requests/{request_id}").json()["document"]["downloadUrl"]

    downloads = {requests.get(pdf_url, timeout=10).status_code for _ in range(3)}
    controls = {
        requests.get(f"{emulator.url}/_emulator/stats", timeout=10).status_code for _ in range(3)
    }

    assert downloads == {200}
    assert controls == {200}
    assert api.get("/key/list-cars").status_code == 429


def test_the_default_quota_is_generous(api: Api, emulator: Emulator) -> None:
    assert emulator.control("GET", "rate-limit") == {"limit": 600, "window": 60}
    statuses = {api.get("/key/list-cars").status_code for _ in range(50)}

    assert statuses == {200}
