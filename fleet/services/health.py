"""What `/healthz` reports: can this process use its database and cache?"""

from __future__ import annotations

import logging

from django.core.cache import cache
from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)


def health_check() -> dict[str, str]:
    """`ok` or `error` for each dependency the process needs to serve pages.

    The Fleet API is left out on purpose: pages degrade gracefully when it is
    down, so restarting the portal would not help.
    """
    checks = {"database": "ok", "cache": "ok"}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        logger.exception("health check: the database is unavailable")
        checks["database"] = "error"
    try:
        cache.set("healthz", "1", timeout=5)
        if cache.get("healthz") != "1":
            raise ConnectionError("the cache did not keep a value")
    except Exception:
        logger.exception("health check: the cache is unavailable")
        checks["cache"] = "error"
    return checks
