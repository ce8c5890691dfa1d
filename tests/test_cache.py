"""The portal's Redis cache backend: Django's, with one client per connection pool."""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

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
