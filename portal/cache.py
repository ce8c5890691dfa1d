"""Django's Redis cache backend, keeping one client per connection pool, and going on
without Redis.

Django's `RedisCacheClient.get_client` makes a new `redis.Redis` for every
call, and a `redis.Redis` builds its table of about 170 response callbacks
when made: about as long as the round trip to a local Redis itself. The
vehicles page reads one small key per request, so that doubled its cost. A
`redis.Redis` may be shared by threads (each command takes a connection from
the pool), so one per pool is kept instead. Everything else is Django's.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import redis.exceptions
from django.core.cache.backends import redis as django_redis
from django.core.cache.backends.base import DEFAULT_TIMEOUT

logger = logging.getLogger(__name__)

# Redis restarting, unreachable or too slow: what a cache may do without.
UNAVAILABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
_WARN_EVERY_S = 10.0


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
    """While Redis cannot be reached, the cache behaves as an empty one that keeps nothing.

    A read is a miss, a write is dropped, and `add` succeeds (as on an empty
    cache): the portal does the work a cached value or a lock would have
    spared, a little slower, rather than answer 500 for every page during a
    Redis restart. A warning is logged at most every 10 s per process, and
    `/healthz` reports the cache as failing (it checks that a value is kept).
    """

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClient
        self._warned_at = -_WARN_EVERY_S

    def _unavailable(self, operation: str, error: Exception) -> None:
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            logger.warning(
                "the cache is unavailable (%s): %s; going on without it", operation, error
            )

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        try:
            return super().get(key, default, version)
        except UNAVAILABLE as error:
            self._unavailable("get", error)
            return default

    def get_many(self, keys: Any, version: int | None = None) -> dict[Any, Any]:
        try:
            return super().get_many(keys, version)
        except UNAVAILABLE as error:
            self._unavailable("get_many", error)
            return {}

    def has_key(self, key: Any, version: int | None = None) -> bool:
        try:
            return super().has_key(key, version)
        except UNAVAILABLE as error:
            self._unavailable("has_key", error)
            return False

    def add(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> bool:
        try:
            return super().add(key, value, timeout, version)
        except UNAVAILABLE as error:
            self._unavailable("add", error)
            return True

    def set(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> None:
        try:
            super().set(key, value, timeout, version)
        except UNAVAILABLE as error:
            self._unavailable("set", error)

    def set_many(
        self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> list[Any]:
        try:
            return super().set_many(data, timeout, version)
        except UNAVAILABLE as error:
            self._unavailable("set_many", error)
            return list(data)

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        try:
            return super().touch(key, timeout, version)
        except UNAVAILABLE as error:
            self._unavailable("touch", error)
            return False

    def delete(self, key: Any, version: int | None = None) -> bool:
        try:
            return super().delete(key, version)
        except UNAVAILABLE as error:
            self._unavailable("delete", error)
            return False

    def delete_many(self, keys: Any, version: int | None = None) -> None:
        try:
            super().delete_many(keys, version)
        except UNAVAILABLE as error:
            self._unavailable("delete_many", error)
