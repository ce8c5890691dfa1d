"""Django's Redis cache backend, keeping one client per connection pool.

Django's `RedisCacheClient.get_client` makes a new `redis.Redis` for every
call, and a `redis.Redis` builds its table of about 170 response callbacks
when made: about as long as the round trip to a local Redis itself. The
vehicles page reads one small key per request, so that doubled its cost. A
`redis.Redis` may be shared by threads (each command takes a connection from
the pool), so one per pool is kept instead. Everything else is Django's.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends import redis as django_redis


class RedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, servers: Any, **options: Any) -> None:
        super().__init__(servers, **options)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        # django-stubs leave out the private parts used here: Django's own names.
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = self._clients.get(id(pool))
        if client is None:
            make = self._client  # type: ignore[attr-defined]
            client = self._clients[id(pool)] = make(connection_pool=pool)
        return client


class RedisCache(django_redis.RedisCache):
    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClient
