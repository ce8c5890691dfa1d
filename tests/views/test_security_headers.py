from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def page_response(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("m", password="pw-123456"))
    return client.get("/")


def test_pages_refuse_to_be_framed(page_response):
    assert page_response["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page_response["Content-Security-Policy"]


def test_csp_allows_only_own_scripts_and_the_fleet_login_origin_in_frames(page_response, settings):
    policy = dict(
        directive.strip().split(" ", 1)
        for directive in page_response["Content-Security-Policy"].split(";")
    )

    assert policy["script-src"] == "'self'"
    assert policy["frame-src"] == settings.FLEET_LOGIN_ORIGIN
    # The deep link posts to the portal, which redirects into the fleet app.
    assert policy["form-action"] == f"'self' {settings.FLEET_LOGIN_ORIGIN}"
    assert "unsafe-inline" not in page_response["Content-Security-Policy"]


def test_referrer_policy_and_nosniff(page_response):
    assert page_response["Referrer-Policy"] == "same-origin"
    assert page_response["X-Content-Type-Options"] == "nosniff"


def test_htmx_is_served_from_our_own_static_files(page_response):
    assert '<script src="/static/django_htmx/htmx-2.min.js"' in page_response.text
    assert "https://" not in page_response.text.split("<body")[0]


def test_session_and_csrf_cookies_are_secure_outside_debug(client, django_user_model):
    django_user_model.objects.create_user("m", password="pw-123456")
    response = client.post("/accounts/login/", {"username": "m", "password": "pw-123456"})

    assert response.cookies["sessionid"]["secure"]
    assert response.cookies["sessionid"]["httponly"]


# Headers that announce the software behind a site, and words that name ours.
SOFTWARE_HEADERS = {"server", "x-powered-by", "x-aspnet-version", "x-generator", "x-runtime"}
SOFTWARE_NAMES = re.compile(r"django|python|cpython|wsgiserver|gunicorn|whitenoise", re.I)


@pytest.mark.parametrize(
    ("path", "signed_in"),
    [
        ("/", True),
        ("/fines/export.csv", True),
        ("/admin/", True),
        ("/accounts/login/", False),
        ("/vehicles/", False),  # a redirect to the login page
        ("/healthz", False),
        ("/no-such-page/", False),  # Django's 404
        ("/static/css/portal.css", False),  # WhiteNoise
        ("/webhooks/fleet/dev-webhook-token/", False),  # a 405: GET on the receiver
    ],
)
def test_no_response_names_the_software_or_its_version(client, django_user_model, path, signed_in):
    if signed_in:
        client.force_login(django_user_model.objects.create_superuser("a", password="pw-123456"))

    response = client.get(path)

    headers = {name.lower(): value for name, value in response.headers.items()}
    assert not SOFTWARE_HEADERS & set(headers), headers
    assert not [f"{n}: {v}" for n, v in headers.items() if SOFTWARE_NAMES.search(v)]
