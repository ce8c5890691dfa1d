"""The portal's Redis cache backend: Django's, with one client per connection pool, and
going on without Redis."""

from __future__ import annotations

import logging

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

from bench.servers import free_port
from portal.cache import RedisCache

NOBODY = "redis://127.0.0.1:9/0"  # the discard port: making a client sends nothing


def test_each_call_gets_the_same_client():
    backend = RedisCache(NOBODY, {})

    client = backend._cache.get_client("a-key")

    assert backend._cache.get_client("another-key") is client
    assert backend._cache.get_client("a-key", write=True) is client  # one server, one pool


def test_servers_get_a_client_each():
    backend = RedisCache(f"{NOBODY};redis://127.0.0.1:9/1", {})

    writer = backend._cache.get_client(write=True)
    reader = backend._cache.get_client()  # reads go to the other server

    assert reader is not writer
    assert reader.connection_pool.connection_kwargs["db"] == 1
    assert backend._cache.get_client() is reader


def test_it_is_djangos_backend_otherwise():
    assert isinstance(RedisCache(NOBODY, {}), DjangoRedisCache)


def test_without_redis_the_cache_is_an_empty_one_that_keeps_nothing(caplog):
    """A Redis restart costs cached values and locks, not pages (bench/soak.py restarts it)."""
    backend = RedisCache(f"redis://127.0.0.1:{free_port()}/0", {})

    with caplog.at_level(logging.WARNING, logger="portal.cache"):
        assert backend.get("vehicles", "fallback") == "fallback"
        backend.set("vehicles", [1, 2, 3])
        assert backend.get("vehicles") is None
        assert backend.add("lock", "token") is True  # as on an empty cache: the caller goes on
        assert backend.get_many(["a", "b"]) == {}
        assert backend.set_many({"a": 1, "b": 2}) == ["a", "b"]  # none kept
        assert backend.has_key("a") is False
        assert backend.delete("lock") is False
        assert backend.touch("a") is False
        backend.delete_many(["a", "b"])

    warnings = [r for r in caplog.records if r.name == "portal.cache"]
    assert len(warnings) == 1  # once, not once per call
    assert "the cache is unavailable (get)" in warnings[0].getMessage()
