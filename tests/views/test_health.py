from __future__ import annotations

import os

import pytest
from django.core.cache import caches
from django.db import connection

pytestmark = pytest.mark.django_db


def test_healthz_answers_ok_without_login(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "cache": "ok"}}
    assert "no-cache" in response["Cache-Control"]


def test_healthz_says_which_dependency_fails(client, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # discard port: nothing answers
        }
    }

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["checks"] == {"database": "ok", "cache": "error"}


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
