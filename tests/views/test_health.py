from __future__ import annotations

import os

import pytest
from django.core.cache import caches
from django.db import connection

pytestmark = pytest.mark.django_db


REMOTE = {"REMOTE_ADDR": "203.0.113.7"}  # an address of the internet (TEST-NET-3)
DETAIL = {"status": "ok", "checks": {"database": "ok", "cache": "ok"}}


@pytest.fixture
def broken_cache(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # discard port: nothing answers
        }
    }


def test_healthz_answers_ok_without_login(client):
    response = client.get("/healthz")  # the test client's REMOTE_ADDR is 127.0.0.1

    assert response.status_code == 200
    assert response.json() == DETAIL
    assert "no-cache" in response["Cache-Control"]


def test_healthz_says_which_dependency_fails(client, broken_cache):
    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["checks"] == {"database": "ok", "cache": "error"}


def test_anonymous_callers_from_elsewhere_learn_only_up_or_down(client):
    response = client.get("/healthz", **REMOTE)

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_anonymous_callers_from_elsewhere_learn_only_that_it_is_down(client, broken_cache):
    response = client.get("/healthz", **REMOTE)

    assert response.status_code == 503
    assert response.json() == {"status": "error"}


@pytest.mark.parametrize(
    "relayed",
    [
        {"X-Forwarded-For": "203.0.113.7"},
        {"X-Forwarded-For": "127.0.0.1"},  # whatever it says: a proxy relayed it
        {"Forwarded": "for=203.0.113.7;proto=https"},
        {"X-Real-IP": "203.0.113.7"},
    ],
)
def test_a_request_relayed_by_a_proxy_on_loopback_is_not_local(client, relayed):
    response = client.get("/healthz", headers=relayed, REMOTE_ADDR="127.0.0.1")

    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize("address", ["::1", "127.0.0.1", "::ffff:127.0.0.1"])
def test_requests_from_this_machine_get_the_detail(client, address):
    assert client.get("/healthz", REMOTE_ADDR=address).json() == DETAIL


def test_staff_get_the_detail_from_anywhere(client, admin_user):
    client.force_login(admin_user)

    response = client.get("/healthz", headers={"X-Forwarded-For": "198.51.100.4"}, **REMOTE)

    assert response.json() == DETAIL


def test_a_signed_in_manager_who_is_not_staff_learns_only_up_or_down(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("m", password="pw-123456"))

    assert client.get("/healthz", **REMOTE).json() == {"status": "ok"}


def test_database_is_the_configured_one():
    """Proves the PostgreSQL leg of CI really runs on PostgreSQL."""
    expected = (
        "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    )
    assert connection.vendor == expected


def test_cache_is_the_configured_one():
    """Proves the Redis leg of CI really runs on Redis."""
    redis = os.environ.get("CACHE_URL", "").startswith("redis")
    assert (type(caches["default"]).__name__ == "RedisCache") is redis


def test_healthz_answers_over_plain_http_where_the_rest_redirects_to_https(client, settings):
    settings.SECURE_SSL_REDIRECT = True  # production's default

    assert client.get("/healthz").status_code == 200  # load balancers probe over http
    redirected = client.get("/accounts/login/")
    assert redirected.status_code == 301
    assert redirected["Location"] == "https://testserver/accounts/login/"
