"""Authentication of every API route (spec section 5; failures in 5.4 and 7)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from tests.conftest import Emulator
from tests.emulator.support import (
    DEMO_SECRET,
    DEMO_TOKEN,
    NO_PERMISSION_SECRET,
    NO_PERMISSION_TOKEN,
    OTHER_ENV_SECRET,
    OTHER_ENV_TOKEN,
    V1_ROUTES,
    V2_ERROR,
    V2_ROUTES,
    Api,
    auth_headers,
    load_vectors,
    sign,
)

ALL_ROUTES = V1_ROUTES + V2_ROUTES
FBK_001 = {"error": True, "code": "fbk_001", "message": "Não autorizado"}
DEMO_VECTOR = next(v for v in load_vectors() if v["access_token"] == DEMO_TOKEN)


def _wrong_keys() -> dict[str, dict[str, str | None]]:
    """Signatures section 5.3 says must fail, for the demo token."""
    digest = hmac.new(DEMO_SECRET.encode(), DEMO_TOKEN.encode(), hashlib.sha256).digest()
    return {
        "base64 (vector)": {"Key": DEMO_VECTOR["reject"]["base64_of_same_digest"]},
        "base64 (computed)": {"Key": base64.b64encode(digest).decode()},
        "swapped key and message (vector)": {
            "Key": DEMO_VECTOR["reject"]["key_and_message_swapped"]
        },
        "swapped key and message": {"Key": sign(DEMO_SECRET, DEMO_TOKEN)},
        "upper-case hex": {"Key": digest.hex().upper()},
        "HMAC-SHA1": {"Key": sign(DEMO_TOKEN, DEMO_SECRET, hashlib.sha1)},
        "HMAC-SHA512": {"Key": sign(DEMO_TOKEN, DEMO_SECRET, hashlib.sha512)},
        "HMAC-MD5": {"Key": sign(DEMO_TOKEN, DEMO_SECRET, hashlib.md5)},
        "plain SHA-256 of the token": {"Key": hashlib.sha256(DEMO_TOKEN.encode()).hexdigest()},
        "secret with a trailing newline": {"Key": sign(DEMO_TOKEN, DEMO_SECRET + "\n")},
        "secret with a trailing space": {"Key": sign(DEMO_TOKEN, DEMO_SECRET + " ")},
        "token signed with a trailing newline": {"Key": sign(DEMO_TOKEN + "\n", DEMO_SECRET)},
        "key header with a trailing space": {"Key": sign(DEMO_TOKEN, DEMO_SECRET) + " "},
        "token header with a trailing space": {
            "Authorization": f"Basic {DEMO_TOKEN} ",
            "Key": sign(DEMO_TOKEN + " ", DEMO_SECRET),
        },
        "token header with two spaces after Basic": {
            "Authorization": f"Basic  {DEMO_TOKEN}",
            "Key": sign(" " + DEMO_TOKEN, DEMO_SECRET),
        },
        "other environment pair": {
            "Authorization": f"Basic {OTHER_ENV_TOKEN}",
            "Key": sign(OTHER_ENV_TOKEN, OTHER_ENV_SECRET),
        },
        "demo token signed with the other environment's secret": {
            "Key": sign(DEMO_TOKEN, OTHER_ENV_SECRET)
        },
        "unknown token": {
            "Authorization": "Basic not-a-token",
            "Key": sign("not-a-token", DEMO_SECRET),
        },
    }


WRONG_KEYS = _wrong_keys()


def test_signing_helper_reproduces_the_shared_vectors() -> None:
    for vector in load_vectors():
        assert sign(vector["access_token"], vector["secret_key"]) == vector["key_header"]


def test_the_vector_key_header_is_accepted(api: Api) -> None:
    headers = auth_headers(Key=DEMO_VECTOR["key_header"])

    assert api.get("/key/list-cars", headers=headers).status_code == 200


@pytest.mark.parametrize(("method", "path"), ALL_ROUTES)
def test_every_route_accepts_the_three_headers(api: Api, method: str, path: str) -> None:
    response = api.call(method, path)

    # 404 for the made-up request id: past authentication all the same.
    assert response.status_code in (200, 404)
    assert response.json().get("code") != "fbk_001"


@pytest.mark.parametrize("case", list(WRONG_KEYS))
def test_wrong_signatures_are_rejected_on_v1_without_hint_of_cause(api: Api, case: str) -> None:
    response = api.get("/key/list-cars", headers=auth_headers(**WRONG_KEYS[case]))

    assert response.status_code == 401
    assert response.json() == FBK_001


@pytest.mark.parametrize("case", list(WRONG_KEYS))
def test_wrong_signatures_are_authentication_failed_on_v2(api: Api, case: str) -> None:
    path = "/v2/crlv/vehicles/ABC1234"
    response = api.get(path, headers=auth_headers(**WRONG_KEYS[case]))

    assert response.status_code == 401
    assert response.json()["type"] == V2_ERROR + "authentication-failed"


def test_base64_signature_is_rejected(api: Api) -> None:
    headers = auth_headers(Key=DEMO_VECTOR["reject"]["base64_of_same_digest"])

    assert api.get("/key/list-cars", headers=headers).status_code == 401


def test_second_vector_pair_is_unknown_to_the_emulator(api: Api) -> None:
    vector = next(v for v in load_vectors() if v["access_token"] != DEMO_TOKEN)
    headers = auth_headers(vector["access_token"], vector["secret_key"])

    assert headers["Key"] == vector["key_header"]
    assert api.get("/key/list-cars", headers=headers).json() == FBK_001


MISSING_CREDENTIALS: dict[str, dict[str, str | None]] = {
    "no Authorization": {"Authorization": None},
    "no Key": {"Key": None},
    "neither": {"Authorization": None, "Key": None},
    "Bearer scheme": {"Authorization": f"Bearer {DEMO_TOKEN}"},
    "token without scheme": {"Authorization": DEMO_TOKEN},
    "Basic with no token": {"Authorization": "Basic "},
}


@pytest.mark.parametrize("case", list(MISSING_CREDENTIALS))
@pytest.mark.parametrize(("method", "path"), V1_ROUTES)
def test_missing_credentials_are_fbk_001_on_v1(api: Api, method: str, path: str, case: str) -> None:
    response = api.call(method, path, headers=auth_headers(**MISSING_CREDENTIALS[case]))

    assert response.status_code == 401
    assert response.json() == FBK_001


@pytest.mark.parametrize("case", list(MISSING_CREDENTIALS))
@pytest.mark.parametrize(("method", "path"), V2_ROUTES)
def test_missing_credentials_are_unauthorized_on_v2(
    api: Api, method: str, path: str, case: str
) -> None:
    response = api.call(method, path, headers=auth_headers(**MISSING_CREDENTIALS[case]))

    assert response.status_code == 401
    assert response.json()["type"] == V2_ERROR + "unauthorized"


def test_v2_tells_unauthorized_from_authentication_failed(api: Api) -> None:
    path = "/v2/crlv/vehicles/ABC1234"
    missing = api.get(path, headers=auth_headers(Key=None)).json()
    wrong = api.get(path, headers=auth_headers(Key=sign(DEMO_SECRET, DEMO_TOKEN))).json()

    assert missing["type"] == V2_ERROR + "unauthorized"
    assert wrong["type"] == V2_ERROR + "authentication-failed"
    assert missing["status"] == wrong["status"] == 401


def test_fbk_001_answers_are_identical_whatever_the_cause(api: Api) -> None:
    causes: list[dict[str, str | None]] = [
        {"Key": None},
        {"Authorization": f"Bearer {DEMO_TOKEN}"},
        WRONG_KEYS["unknown token"],
        WRONG_KEYS["other environment pair"],
        WRONG_KEYS["base64 (vector)"],
    ]
    answers = set()
    for cause in causes:
        response = api.get("/key/list-cars", headers=auth_headers(**cause))
        answers.add((response.status_code, response.content, response.headers["Content-Type"]))

    assert len(answers) == 1


@pytest.mark.parametrize("value", [None, "", "max-age=0", "no-store", "cache"])
@pytest.mark.parametrize(("method", "path"), ALL_ROUTES)
def test_cache_control_no_cache_is_required(
    api: Api, method: str, path: str, value: str | None
) -> None:
    response = api.call(method, path, headers=auth_headers(cache_control=value))

    assert response.status_code == 400
    body = response.json()
    if path.startswith("/v2/"):
        assert body["type"] == V2_ERROR + "bad-request"
    else:
        assert body["code"] == "fbk_400"


def test_cache_control_may_carry_no_cache_among_other_directives(api: Api) -> None:
    headers = auth_headers(cache_control="no-store, No-Cache")

    assert api.get("/key/list-cars", headers=headers).status_code == 200


def test_account_without_permission_gets_fbk_002(api: Api) -> None:
    headers = auth_headers(NO_PERMISSION_TOKEN, NO_PERMISSION_SECRET)

    response = api.get("/key/list-cars", headers=headers)

    assert response.status_code == 403
    assert response.json() == {"error": True, "code": "fbk_002", "message": "Sem permissão"}


def test_account_without_permission_is_forbidden_on_v2(api: Api) -> None:
    headers = auth_headers(NO_PERMISSION_TOKEN, NO_PERMISSION_SECRET)

    response = api.get("/v2/crlv/vehicles/ABC1234", headers=headers)

    assert response.status_code == 403
    assert response.json()["type"] == V2_ERROR + "forbidden"


def test_fbk_002_is_not_given_for_a_wrong_signature(api: Api) -> None:
    # Permission is a matter of the account, told only once the signature is right.
    headers = auth_headers(NO_PERMISSION_TOKEN, DEMO_SECRET)

    assert api.get("/key/list-cars", headers=headers).json() == FBK_001


def test_the_same_key_works_for_every_route_body_and_time(api: Api, emulator: Emulator) -> None:
    # Spec 5.3.4: the signature covers neither body, URL nor time.
    headers = auth_headers()
    assert api.get("/key/list-cars", headers=headers).status_code == 200
    emulator.advance(30 * 86_400)
    assert api.get("/key/list-cars?page=2", headers=headers).status_code == 200
    assert api.post("/key/generator", headers=headers).status_code == 200
    plate = emulator.vehicles()[0]["car_plate"]
    assert api.get(f"/v2/crlv/vehicles/{plate}", headers=headers).status_code == 200


def test_the_scheme_name_is_case_insensitive(api: Api) -> None:
    headers = auth_headers(Authorization=f"basic {DEMO_TOKEN}")

    assert api.get("/key/list-cars", headers=headers).status_code == 200
