"""What the portal keeps for speed, and the one switch that turns all of it off.

Every cache kept for speed reads `caches_on()` before it answers from what it kept:
with the `SPEED_CACHES` setting off, or inside `caches_off()` (a test that answers the
same request both ways), each answer is computed again, as if nothing were kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings

_off: ContextVar[bool] = ContextVar("portal_caches_off", default=False)


def caches_on() -> bool:
    """Whether what is kept for speed may answer now."""
    return not _off.get() and bool(getattr(settings, "SPEED_CACHES", True))


@contextmanager
def caches_off() -> Iterator[None]:
    """Within: every cache kept for speed computes its answer again (this thread or task
    only; what is kept stays as it was)."""
    token = _off.set(True)
    try:
        yield
    finally:
        _off.reset(token)
