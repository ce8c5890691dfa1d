"""POST /key/generator (spec 4.2, 2.3) and the web app's single-use login."""

from __future__ import annotations

import re

import pytest
import requests

from tests.conftest import Emulator
from tests.emulator.support import (
    DEMO_SECRET,
    DEMO_TOKEN,
    DRIVER,
    MANAGER,
    UUID_PATTERN,
    WEB_PASSWORD,
    Api,
    auth_headers,
)

HEIGHT_MESSAGE = (
    'parent.postMessage({"type": "fleet-app:height", "height": height, "state": state}, "*")'
)


def test_it_mints_a_uuid_access_key_in_the_v1_envelope(api: Api) -> None:
    response = api.post("/key/generator", json={"email": MANAGER, "password": WEB_PASSWORD})

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"accessKey", "error", "code"}
    assert body["error"] is False
    assert body["code"] == "fbk_200"
    assert re.fullmatch(UUID_PATTERN, body["accessKey"])


def test_every_call_mints_a_different_key_unlike_the_access_token(api: Api) -> None:
    keys = {api.access_key() for _ in range(3)}

    assert len(keys) == 3
    assert not keys & {DEMO_TOKEN, DEMO_SECRET}


@pytest.mark.parametrize(
    "body",
    [
        {"email": MANAGER},
        {"password": WEB_PASSWORD},
        {},
        {"email": "", "password": WEB_PASSWORD},
        {"email": MANAGER, "password": 123},
    ],
)
def test_email_and_password_are_required(api: Api, body: dict[str, object]) -> None:
    response = api.post("/key/generator", json=body)

    assert response.status_code == 400
    assert response.json()["code"] == "fbk_400"
    assert response.json()["error"] is True


def test_a_body_that_is_not_json_is_rejected(api: Api) -> None:
    response = api.post(
        "/key/generator",
        data=b"email=x",
        headers={**auth_headers(), "Content-Type": "application/json"},
    )

    assert response.status_code == 400
    assert response.json()["code"] == "fbk_400"


def test_a_body_without_json_content_type_is_rejected(api: Api) -> None:
    body = b'{"email": "manager@example.com", "password": "demo-password"}'
    headers = {**auth_headers(), "Content-Type": "text/plain"}

    response = api.post("/key/generator", data=body, headers=headers)

    assert response.status_code == 400
    assert response.json()["code"] == "fbk_400"


def test_a_wrong_password_is_fbk_003(api: Api) -> None:
    response = api.post("/key/generator", json={"email": MANAGER, "password": "nope"})

    assert response.status_code == 401
    assert response.json()["code"] == "fbk_003"


def test_an_unknown_user_is_fbk_003(api: Api) -> None:
    response = api.post(
        "/key/generator", json={"email": "nobody@example.com", "password": WEB_PASSWORD}
    )

    assert response.json()["code"] == "fbk_003"


def test_generator_takes_post_only(api: Api) -> None:
    assert api.get("/key/generator").status_code == 405


def test_login_logs_the_user_in_the_first_time(api: Api, emulator: Emulator) -> None:
    key = api.access_key(DRIVER)

    response = requests.get(f"{emulator.login_url}/login", params={"accessKey": key}, timeout=10)

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert f'data-fleet-user="{DRIVER}"' in response.text
    assert DRIVER in response.text
    assert "fleet_app_session" in response.cookies


def test_an_access_key_is_single_use(api: Api, emulator: Emulator) -> None:
    key = api.access_key()
    login = f"{emulator.login_url}/login?accessKey={key}"

    first = requests.get(login, timeout=10)
    second = requests.get(login, timeout=10)

    assert first.status_code == 200
    assert second.status_code == 401
    assert 'data-fleet-state="expired"' in second.text
    assert MANAGER not in second.text
    assert "Set-Cookie" not in second.headers


def test_an_unknown_or_missing_access_key_gets_the_expired_page(emulator: Emulator) -> None:
    for query in ("?accessKey=3f2a0c1e-0000-4000-8000-000000000000", "?accessKey=", ""):
        response = requests.get(f"{emulator.login_url}/login{query}", timeout=10)
        assert response.status_code == 401
        assert 'data-fleet-state="expired"' in response.text


def test_an_unused_access_key_expires_after_ten_minutes(api: Api, emulator: Emulator) -> None:
    fresh, stale = api.access_key(), api.access_key()
    emulator.advance(9 * 60)
    assert requests.get(f"{emulator.login_url}/login?accessKey={fresh}", timeout=10).ok

    emulator.advance(61)

    response = requests.get(f"{emulator.login_url}/login?accessKey={stale}", timeout=10)
    assert response.status_code == 401


def test_the_session_cookie_opens_the_app(api: Api, emulator: Emulator) -> None:
    browser = requests.Session()
    browser.get(f"{emulator.login_url}/login?accessKey={api.access_key()}", timeout=10)

    with_cookie = browser.get(f"{emulator.login_url}/", timeout=10)
    without = requests.get(f"{emulator.login_url}/", timeout=10)

    assert with_cookie.status_code == 200
    assert f'data-fleet-user="{MANAGER}"' in with_cookie.text
    assert without.status_code == 401
    assert 'data-fleet-state="expired"' in without.text


def test_app_pages_can_be_framed_and_post_their_height(api: Api, emulator: Emulator) -> None:
    logged_in = requests.get(f"{emulator.login_url}/login?accessKey={api.access_key()}", timeout=10)
    expired = requests.get(f"{emulator.login_url}/login?accessKey=used", timeout=10)

    for page in (logged_in, expired):
        assert "X-Frame-Options" not in page.headers
        assert "frame-ancestors" not in page.headers.get("Content-Security-Policy", "")
        assert HEIGHT_MESSAGE in page.text
        assert '<html lang="pt-BR">' in page.text


def test_app_pages_do_not_leak_the_key_in_the_referer(api: Api, emulator: Emulator) -> None:
    page = requests.get(f"{emulator.login_url}/login?accessKey={api.access_key()}", timeout=10)

    assert page.headers["Referrer-Policy"] == "no-referrer"
    assert page.headers["Cache-Control"] == "no-store"


def test_reset_forgets_minted_keys(api: Api, emulator: Emulator) -> None:
    key = api.access_key()

    emulator.reset()

    assert (
        requests.get(f"{emulator.login_url}/login?accessKey={key}", timeout=10).status_code == 401
    )
